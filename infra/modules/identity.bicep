// Managed identities and every role assignment dagq needs, each with only the roles it uses.
// infra/README.md ("Roles") says why each one is there; tests/infra checks that this file assigns
// exactly the roles that table lists, no more and no fewer.

param location string
param appIdentityName string
param workerIdentityName string
param storageAccountName string
param workflowsContainerName string
param outputsContainerName string
param deadletterContainerName string

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
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
}

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

// -- the Function App (API, coordinator, sweeps) --------------------------------------------------

resource appBlobDataOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appIdentity.id, roleIds.storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
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

resource appTableDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appIdentity.id, roleIds.storageTableDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// -- workers (GPU VM Scale Set, AKS pods, KEDA's queue-length probe) -------------------------------

resource workerQueueDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, workerIdentity.id, roleIds.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

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

resource workerWorkflowsReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(workflowsContainer.id, workerIdentity.id, roleIds.storageBlobDataReader)
  scope: workflowsContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
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
