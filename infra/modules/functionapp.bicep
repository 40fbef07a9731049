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

@description('Coordinator partitions (DAGQ_PARTITIONS): one queue trigger each.')
@minValue(1)
@maxValue(64)
param partitions int = 1

@description('VM size of the GPU pool (DAGQ_GPU_VM_SKU): the default price of the gpu queue in cost reports; empty: no pool.')
param gpuVmSku string = ''

@description('The app\'s private Ed25519 key (DAGQ_SIGNING_KEY; shared/signing): it signs every task message and control event. The app only.')
@secure()
param signingKey string = ''

@description('Public keys a control event may be signed with besides the signing key\'s own (DAGQ_VERIFY_KEYS): the old key during a rotation.')
param verifyKeys string = ''

@description('NCRONTAB schedule (seconds first) of the sweep timer (DAGQ_SWEEP_SCHEDULE).')
param sweepSchedule string

@description('Application Insights component the app reports to (its connection string is read here, never passed around).')
param applicationInsightsName string

@description('Log Analytics workspace that receives the app\'s diagnostic logs; empty: none.')
param logAnalyticsWorkspaceId string = ''

@description('Entra ID (App Service authentication) in front of the API: the application (client) id of the app registration whose tokens it accepts; empty: off (function keys only).')
param apiAuthClientId string = ''

@description('Tenant of apiAuthClientId\'s app registration.')
param apiAuthTenantId string = tenant().tenantId

@description('Subnet (delegated to Microsoft.App/environments) for VNet integration, required to reach a storage account behind private endpoints or network rules; empty: none.')
param virtualNetworkSubnetId string = ''

@description('Endpoint of the Event Grid topic that receives notifications (DAGQ_EVENTGRID_ENDPOINT, main.bicep\'s eventGridTopic); empty: none.')
param eventGridEndpoint string = ''

// 40: the lowest maximum Microsoft documents as accepted everywhere ("Currently the lowest maximum
// instance count value is 40", Event-driven scaling, "Limit scale-out"); some regions accept less.
// The coordinator is one lease holder per partition, so more instances in the queue trigger's scale
// group only find the lease taken; the limit mostly caps the HTTP API and the bill.
@description('Most instances per Flex Consumption scale group (40 deploys in every region).')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 40

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
  // checkov:skip=CKV_AZURE_225: Flex Consumption plans are zone redundant only in some regions, at a cost; opt in per region (infra/README.md, production checklist)
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

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource functionApp 'Microsoft.Web/sites@2024-04-01' = {
  // checkov:skip=CKV_AZURE_222: the API is the public entry point for the CLI and the dashboard; Entra ID (apiAuthClientId) guards it, and appSubnetId + private storage keep the data private
  // checkov:skip=CKV_AZURE_17: clients authenticate with function keys or Entra ID tokens, not client certificates
  // checkov:skip=CKV_AZURE_212: Flex Consumption scales each function from zero; always-ready instances would bill while idle
  // checkov:skip=CKV_AZURE_213: Flex Consumption has no App Service health check; /api/health answers probes and dagq doctor
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
    virtualNetworkSubnetId: empty(virtualNetworkSubnetId) ? null : virtualNetworkSubnetId
    siteConfig: {
      minTlsVersion: '1.2'
      http20Enabled: true
      ftpsState: 'Disabled'
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
          name: 'DAGQ_PARTITIONS'
          value: string(partitions)
        }
        {
          name: 'DAGQ_GPU_VM_SKU'
          value: gpuVmSku
        }
        {
          name: 'DAGQ_SWEEP_SCHEDULE'
          value: sweepSchedule
        }
        {
          name: 'DAGQ_SIGNING_KEY'
          value: signingKey
        }
        {
          name: 'DAGQ_VERIFY_KEYS'
          value: verifyKeys
        }
        {
          name: 'DAGQ_EVENTGRID_ENDPOINT'
          value: eventGridEndpoint
        }
        {
          name: 'APPLICATIONINSIGHTS_CONNECTION_STRING'
          value: applicationInsights.properties.ConnectionString
        }
        // Ingestion with the app identity's token (App Insights has local auth disabled).
        {
          name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING'
          value: 'ClientId=${appIdentityClientId};Authorization=AAD'
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

// No publishing with user names and passwords (FTP, and SCM/Kudu basic auth): deployments go
// through Entra ID (azd, func publish with az login).
resource ftpCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2023-12-01' = {
  parent: functionApp
  name: 'ftp'
  properties: {
    allow: false
  }
}

resource scmCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2023-12-01' = {
  parent: functionApp
  name: 'scm'
  properties: {
    allow: false
  }
}

// Optional Entra ID in front of the API (App Service authentication): a request without a valid
// token or session for apiAuthClientId is sent to Microsoft's sign-in page before it reaches a
// function (a browser opening /api/ui signs in there, and the session cookie then rides along with
// the dashboard's calls); the function key is still checked behind it. /api/health (probes) and
// /api/openapi.json (the API's schema: no data) stay open. The app registration needs the redirect
// URI https://<app>/.auth/login/aad/callback, ID tokens, and v2 access tokens
// (requestedAccessTokenVersion 2: the issuer below is the v2.0 one); infra/README.md lists the steps.
resource authSettings 'Microsoft.Web/sites/config@2023-12-01' = if (!empty(apiAuthClientId)) {
  // checkov:skip=CKV_AZURE_66: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_63: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_222: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_80: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_13: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_88: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  // checkov:skip=CKV_AZURE_65: checkov reads this authsettingsV2 child (Microsoft.Web/sites/config) as a web app; the site's own settings are on functionApp
  parent: functionApp
  name: 'authsettingsV2'
  properties: {
    platform: {
      enabled: true
    }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'RedirectToLoginPage'
      redirectToProvider: 'azureactivedirectory'
      excludedPaths: [
        '/api/health'
        '/api/openapi.json'
      ]
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: apiAuthClientId
          openIdIssuer: 'https://login.microsoftonline.com/${apiAuthTenantId}/v2.0'
        }
        validation: {
          allowedAudiences: [
            'api://${apiAuthClientId}'
            apiAuthClientId
          ]
        }
      }
    }
  }
}

resource appDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(logAnalyticsWorkspaceId)) {
  name: 'to-log-analytics'
  scope: functionApp
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        category: 'FunctionAppLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output name string = functionApp.name
output url string = 'https://${functionApp.properties.defaultHostName}'
// The scope a client asks a token for when Entra ID is on (DAGQ_API_SCOPE); empty when off. The
// app registration exposes it and pre-authorizes the Azure CLI for it (infra/entra/expose-api.sh),
// so `az login` users get a token without consent. Service principals and managed identities
// (client credentials) ask for api://<client id>/.default instead (infra/README.md).
output apiScope string = empty(apiAuthClientId) ? '' : 'api://${apiAuthClientId}/user_impersonation'
