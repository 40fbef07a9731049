// Managed identities and every role assignment dagq needs, each with only the roles it uses, at the
// narrowest scope that serves (a container, a queue, the index table, the App Insights component).
// infra/README.md ("Roles") says why each one is there; tests/infra checks that this file assigns
// exactly the roles that table lists, no more and no fewer.

param location string
param appIdentityName string
param workerIdentityName string
param storageAccountName string
param workflowsContainerName string
param outputsContainerName string
param deadletterContainerName string
param cacheContainerName string
param deploymentContainerName string
param registryTableName string

@description('The task queues (Azure names) the workers receive from: each gets its own role assignment.')
param taskQueueNames array

@description('The event queue(s) (Azure names) workers send completions to: one per coordinator partition.')
param eventQueueNames array

@description('Application Insights component the app and the workers send telemetry to (Entra ID ingestion).')
param applicationInsightsName string

@description('Object id of a user or service principal that gets data roles for the CLI and local runs; empty: none.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
  'Group'
])
param principalType string = 'User'

@description('OIDC issuer URL of an AKS cluster whose worker pods (and KEDA) use the worker identity; empty: none.')
param aksOidcIssuerUrl string = ''

@description('Kubernetes namespace of the worker service account (infra/aks/).')
param aksNamespace string = 'dagq'

@description('Kubernetes service account the worker pods run as (infra/aks/).')
param aksServiceAccountName string = 'dagq-worker'

@description('Namespace and service account of the KEDA operator, which reads queue lengths as the worker identity.')
param kedaOperatorSubject string = 'system:serviceaccount:kube-system:keda-operator'

param tags object = {}

// Built-in role definition ids (the same in every tenant).
var roleIds = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageQueueDataMessageSender: 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

// The Functions host's own containers (AzureWebJobsStorage): storage.bicep creates them so that the
// app's roles can be scoped to them instead of to the whole account.
var hostContainers = {
  hosts: 'azure-webjobs-hosts'
  secrets: 'azure-webjobs-secrets'
}

// Workers read a state blob's metadata to notice a cancel: the condition limits their reads in the
// workflows container to state blobs ({id}.state, shared/names.py), so definitions stay unreadable.
var stateBlobsOnly = '((!(ActionMatches{\'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read\'})) OR (@Resource[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path] StringLike \'*.state\'))'


resource appIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: appIdentityName
  location: location
  tags: tags
}

resource workerIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: workerIdentityName
  location: location
  tags: tags
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource workflowsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: workflowsContainerName
}

resource outputsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: outputsContainerName
}

resource deadletterContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: deadletterContainerName
}

resource cacheContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: cacheContainerName
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: deploymentContainerName
}

resource hostsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: hostContainers.hosts
}

resource secretsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: hostContainers.secrets
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource registryTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: registryTableName
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource taskQueues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = [
  for queueName in taskQueueNames: {
    parent: queueService
    name: queueName
  }
]

resource eventQueues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = [
  for queueName in eventQueueNames: {
    parent: queueService
    name: queueName
  }
]

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// -- the Function App (API, coordinator, sweeps) --------------------------------------------------

resource appHostsBlobDataOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostsContainer.id, appIdentity.id, roleIds.storageBlobDataOwner)
  scope: hostsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appSecretsBlobDataOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(secretsContainer.id, appIdentity.id, roleIds.storageBlobDataOwner)
  scope: secretsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appDeploymentBlobDataOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(deploymentContainer.id, appIdentity.id, roleIds.storageBlobDataOwner)
  scope: deploymentContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appWorkflowsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(workflowsContainer.id, appIdentity.id, roleIds.storageBlobDataContributor)
  scope: workflowsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appOutputsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(outputsContainer.id, appIdentity.id, roleIds.storageBlobDataContributor)
  scope: outputsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appDeadletterContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(deadletterContainer.id, appIdentity.id, roleIds.storageBlobDataContributor)
  scope: deadletterContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// The result cache: look-ups and records of cached tasks' results, and the sweep of expired ones.
resource appCacheContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(cacheContainer.id, appIdentity.id, roleIds.storageBlobDataContributor)
  scope: cacheContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appQueueDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appIdentity.id, roleIds.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// The account, not only the index table: the Functions host with identity-based storage writes
// its diagnostic events to tables it names by month (AzureFunctionsDiagnosticEvents<yyyymm>),
// which needs Storage Table Data Contributor on the account (Microsoft's
// "functions-azurewebjobsstorage-permissions").
resource appTableDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appIdentity.id, roleIds.storageTableDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource appMetricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, appIdentity.id, roleIds.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.monitoringMetricsPublisher)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// -- workers (GPU VM Scale Set, AKS pods, KEDA's queue-length probe) -------------------------------

resource workerTaskQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (queueName, i) in taskQueueNames: {
    name: guid(taskQueues[i].id, workerIdentity.id, roleIds.storageQueueDataContributor)
    scope: taskQueues[i]
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
      principalId: workerIdentity.properties.principalId
      principalType: 'ServicePrincipal'
    }
  }
]

resource workerEventQueueSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (queueName, i) in eventQueueNames: {
    name: guid(eventQueues[i].id, workerIdentity.id, roleIds.storageQueueDataMessageSender)
    scope: eventQueues[i]
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataMessageSender)
      principalId: workerIdentity.properties.principalId
      principalType: 'ServicePrincipal'
    }
  }
]

resource workerOutputsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(outputsContainer.id, workerIdentity.id, roleIds.storageBlobDataContributor)
  scope: outputsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource workerDeadletterContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(deadletterContainer.id, workerIdentity.id, roleIds.storageBlobDataContributor)
  scope: deadletterContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource workerStateReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(workflowsContainer.id, workerIdentity.id, roleIds.storageBlobDataReader)
  scope: workflowsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    condition: stateBlobsOnly
    conditionVersion: '2.0'
  }
}

// The registry table only: a worker writes its heartbeat there and can touch no workflow's row.
resource workerRegistryTableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(registryTable.id, workerIdentity.id, roleIds.storageTableDataContributor)
  scope: registryTable
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource workerMetricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, workerIdentity.id, roleIds.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.monitoringMetricsPublisher)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// -- the deploying user (optional): the CLI and a local coordinator against the real account ---

resource userBlobDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(principalId)) {
  name: guid(storage.id, principalId, roleIds.storageBlobDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: principalType
  }
}

resource userQueueDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(principalId)) {
  name: guid(storage.id, principalId, roleIds.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
    principalId: principalId
    principalType: principalType
  }
}

resource userTableDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(principalId)) {
  name: guid(storage.id, principalId, roleIds.storageTableDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: principalId
    principalType: principalType
  }
}

// -- AKS workload identity (optional): worker pods and KEDA exchange their service account tokens
// for the worker identity's tokens. Federated credentials on one identity must be written one at a
// time, hence the dependsOn.

resource workerPodsFederation 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = if (!empty(aksOidcIssuerUrl)) {
  parent: workerIdentity
  name: 'aks-dagq-worker'
  properties: {
    issuer: aksOidcIssuerUrl
    subject: 'system:serviceaccount:${aksNamespace}:${aksServiceAccountName}'
    audiences: [
      'api://AzureADTokenExchange'
    ]
  }
}

resource kedaFederation 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = if (!empty(aksOidcIssuerUrl)) {
  parent: workerIdentity
  name: 'aks-keda-operator'
  properties: {
    issuer: aksOidcIssuerUrl
    subject: kedaOperatorSubject
    audiences: [
      'api://AzureADTokenExchange'
    ]
  }
  dependsOn: [
    workerPodsFederation
  ]
}

output appIdentityId string = appIdentity.id
output appIdentityClientId string = appIdentity.properties.clientId
output appIdentityPrincipalId string = appIdentity.properties.principalId
output workerIdentityId string = workerIdentity.id
output workerIdentityClientId string = workerIdentity.properties.clientId
output workerIdentityPrincipalId string = workerIdentity.properties.principalId
