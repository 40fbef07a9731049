// The dagq Function App (HTTP API + the event-queue coordinator + the timer sweeps) on a Flex
// Consumption plan: Linux, Python 3.11, identity-based storage, scale to zero.

param location string
param planName string
param appName string
param tags object = {}

@description('Resource id of the app\'s user-assigned managed identity.')
param appIdentityId string

@description('Client id of the app\'s user-assigned managed identity.')
param appIdentityClientId string

param storageAccountName string
param blobEndpoint string
param queueEndpoint string
param tableEndpoint string

@description('Container (in the same account) that Flex Consumption deploys the app package from.')
param deploymentContainerName string

@description('dagq resource prefix (DAGQ_PREFIX).')
param prefix string

@description('Name of the event queue the coordinator\'s queue trigger listens on.')
param eventQueueName string

@description('NCRONTAB schedule (seconds first) of the sweep timer (DAGQ_SWEEP_SCHEDULE).')
param sweepSchedule string

param applicationInsightsConnectionString string

// Why small: the coordinator is a singleton per prefix (a blob lease), so a second instance in the
// queue trigger's scale group only finds the lease taken and leaves its event for the holder. Flex
// applies this limit per scale group (HTTP functions, the queue trigger, the timer), so it also caps
// the HTTP API; raise it if the API needs more throughput.
@description('Most instances per Flex Consumption scale group.')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 10

@description('Instance size: 512, 2048 or 4096 MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Concurrent HTTP requests per instance (dagq\'s handlers are async).')
@minValue(1)
@maxValue(1000)
param httpPerInstanceConcurrency int = 16

@description('Value of the azd-service-name tag (the service name in azure.yaml).')
param azdServiceName string = 'api'

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: {
    reserved: true
  }
}

resource functionApp 'Microsoft.Web/sites@2024-04-01' = {
  name: appName
  location: location
  tags: union(tags, {
    'azd-service-name': azdServiceName
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${appIdentityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    publicNetworkAccess: 'Enabled'
    siteConfig: {
      minTlsVersion: '1.2'
      http20Enabled: true
      appSettings: [
        // The host's own storage (timer schedules, singleton locks, function keys), by identity.
        {
          name: 'AzureWebJobsStorage__accountName'
          value: storageAccountName
        }
        {
          name: 'AzureWebJobsStorage__blobServiceUri'
          value: blobEndpoint
        }
        {
          name: 'AzureWebJobsStorage__queueServiceUri'
          value: queueEndpoint
        }
        {
          name: 'AzureWebJobsStorage__tableServiceUri'
          value: tableEndpoint
        }
        {
          name: 'AzureWebJobsStorage__credential'
          value: 'managedidentity'
        }
        {
          name: 'AzureWebJobsStorage__clientId'
          value: appIdentityClientId
        }
        // The connection named DAGQ_STORAGE: the queue trigger's binding reads it through the host,
        // dagq's own clients through shared/settings.py, so both reach the same account.
        {
          name: 'DAGQ_STORAGE__accountName'
          value: storageAccountName
        }
        {
          name: 'DAGQ_STORAGE__blobServiceUri'
          value: blobEndpoint
        }
        {
          name: 'DAGQ_STORAGE__queueServiceUri'
          value: queueEndpoint
        }
        {
          name: 'DAGQ_STORAGE__tableServiceUri'
          value: tableEndpoint
        }
        {
          name: 'DAGQ_STORAGE__credential'
          value: 'managedidentity'
        }
        {
          name: 'DAGQ_STORAGE__clientId'
          value: appIdentityClientId
        }
        // azure-identity's ManagedIdentityCredential picks the user-assigned identity from this.
        {
          name: 'AZURE_CLIENT_ID'
          value: appIdentityClientId
        }
        {
          name: 'DAGQ_PREFIX'
          value: prefix
        }
        {
          name: 'DAGQ_EVENT_QUEUE'
          value: eventQueueName
        }
        {
          name: 'DAGQ_SWEEP_SCHEDULE'
          value: sweepSchedule
        }
        {
          name: 'APPLICATIONINSIGHTS_CONNECTION_STRING'
          value: applicationInsightsConnectionString
        }
      ]
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${blobEndpoint}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: appIdentityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
        triggers: {
          http: {
            perInstanceConcurrency: httpPerInstanceConcurrency
          }
        }
      }
      runtime: {
        name: 'python'
        version: '3.11'
      }
    }
  }
}

output name string = functionApp.name
output url string = 'https://${functionApp.properties.defaultHostName}'
