// dagq's storage account and every container, table and queue it uses.
//
// The names below are the ones shared/names.py (ResourceNames) computes from the prefix;
// tests/infra checks that they stay equal. The Functions host also keeps its own state here
// (AzureWebJobsStorage: timer and lease blobs, function keys) and the Flex Consumption deployment
// package lives in its own container; workers get no access to either (see identity.bicep).
// Network: public by default for a quick start (Entra ID only, no keys); networkDefaultAction=Deny
// with allowed ranges/subnets, or publicNetworkAccess=Disabled with private endpoints
// (storage-private-endpoints.bicep), for production (infra/README.md, "Production checklist").

@description('Azure region of the account.')
param location string

@description('Storage account name (3-24 lowercase letters and digits, globally unique).')
@minLength(3)
@maxLength(24)
param accountName string

@description('Namespaces every dagq container, table and queue (2-20 lowercase letters and digits, starting with a letter).')
@minLength(2)
@maxLength(20)
param prefix string = 'dagq'

@description('Task queues to create up front; workers and the coordinator also create missing ones on demand.')
param taskQueues array = [
  'cpu'
  'gpu'
]

@description('Allow account-key (shared key) and SAS access. Off: every client authenticates with Entra ID.')
param allowSharedKeyAccess bool = false

@description('Coordinator partitions: partition p > 0 has its own event queue and poison queue.')
@minValue(1)
@maxValue(64)
param partitions int = 1

@description('Container that holds the Function App\'s deployment package (Flex Consumption).')
param deploymentContainerName string

@description('Public network access to the account: Enabled (quick start) or Disabled (private endpoints only).')
@allowed([
  'Enabled'
  'Disabled'
])
param publicNetworkAccess string = 'Enabled'

@description('Network rule default: Allow (quick start: any network, still Entra ID only) or Deny (only allowedIpRanges, allowedSubnetIds, private endpoints and trusted Azure services).')
@allowed([
  'Allow'
  'Deny'
])
param networkDefaultAction string = 'Allow'

@description('Public IP addresses or CIDR ranges allowed when networkDefaultAction is Deny (your workstation, CI).')
param allowedIpRanges array = []

@description('Subnet resource ids (with the Microsoft.Storage service endpoint) allowed when networkDefaultAction is Deny: the GPU pool subnet, AKS node subnets.')
param allowedSubnetIds array = []

@description('Log Analytics workspace that receives the account\'s diagnostic logs and metrics; empty: none.')
param logAnalyticsWorkspaceId string = ''

@description('Days a deleted blob or container can be restored (blob and container soft delete).')
@minValue(1)
@maxValue(365)
param softDeleteDays int = 7

param tags object = {}

// One place for the names (mirrors shared/names.py ResourceNames).
var names = {
  workflowsContainer: '${prefix}-workflows'
  outputsContainer: '${prefix}-outputs'
  deadletterContainer: '${prefix}-deadletter'
  cacheContainer: '${prefix}-cache'
  indexTable: '${prefix}WorkflowsIndex'
  registryTable: '${prefix}WorkersRegistry'
  schedulesTable: '${prefix}Schedules'
  eventQueue: '${prefix}-events'
  eventPoisonQueue: '${prefix}-events-poison'
  notifyQueue: '${prefix}-notify'
  notifyPoisonQueue: '${prefix}-notify-poison'
}
// ResourceNames.task_queue: '{prefix}-q-{queue}', lower-cased, '_' -> '-'.
var taskQueueNames = [for queue in taskQueues: '${prefix}-q-${toLower(replace(queue, '_', '-'))}']

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_35: the quick start allows every network (access is still Entra ID only); storageNetworkDefaultAction=Deny with private endpoints or allowed subnets in production
  // checkov:skip=CKV_AZURE_59: public network access is the quick start default (Entra ID only, no shared keys, no anonymous blob access); storagePublicNetworkAccess=Disabled with private endpoints in production
  // checkov:skip=CKV_AZURE_206: LRS for the quick start (three copies in one datacenter); ZRS or GZRS in production (infra/README.md, production checklist)
  // checkov:skip=CKV_AZURE_43: checkov cannot evaluate the name: st + uniqueString(...), 15 lowercase letters and digits (main.bicep)
  name: accountName
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    allowSharedKeyAccess: allowSharedKeyAccess
    allowCrossTenantReplication: false
    defaultToOAuthAuthentication: true
    publicNetworkAccess: publicNetworkAccess
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: networkDefaultAction
      ipRules: [
        for range in allowedIpRanges: {
          value: range
          action: 'Allow'
        }
      ]
      virtualNetworkRules: [
        for subnetId in allowedSubnetIds: {
          id: subnetId
          action: 'Allow'
        }
      ]
    }
  }
}

// Child resources are declared at the top level with `parent:` (one resource per declaration
// keeps them easy to read and to check in tests/infra).
// All of dagq's state lives in blobs: a deleted blob or container can be restored for
// softDeleteDays (infra/README.md, "Recovering deleted state").
resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: softDeleteDays
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: softDeleteDays
    }
  }
}

resource workflowsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: names.workflowsContainer
  properties: {
    publicAccess: 'None'
  }
}

resource outputsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: names.outputsContainer
  properties: {
    publicAccess: 'None'
  }
}

resource deadletterContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: names.deadletterContainer
  properties: {
    publicAccess: 'None'
  }
}

resource cacheContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: names.cacheContainer
  properties: {
    publicAccess: 'None'
  }
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

// The Functions host's own containers (timers and locks; function keys). The host would create them
// on first start; creating them here lets identity.bicep scope the app's Owner role to them.
resource hostsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: 'azure-webjobs-hosts'
  properties: {
    publicAccess: 'None'
  }
}

resource secretsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: 'azure-webjobs-secrets'
  properties: {
    publicAccess: 'None'
  }
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource indexTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = {
  parent: tableService
  name: names.indexTable
}

// The worker registry: a table of its own, so the workers' role on it reaches no index row.
resource registryTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = {
  parent: tableService
  name: names.registryTable
}

// The schedules (dagq schedule): only the app's identity has a table role that reaches them
// (identity.bicep appTableDataContributor); the workers' table role is on the registry only.
resource schedulesTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = {
  parent: tableService
  name: names.schedulesTable
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource eventQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: names.eventQueue
}

// The Functions host moves an event here after maxDequeueCount failures; the poison-repair sweep
// reads it, so it exists from the start.
resource eventPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: names.eventPoisonQueue
}

// Notifications to deliver (issue 29): the coordinator enqueues, the app's notify function
// delivers. Only the app's role (account-wide queue data) reaches it; workers have none here.
resource notifyQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: names.notifyQueue
}

// The Functions host moves a notification here after maxDequeueCount failed deliveries (storage
// trouble); partition 0's sweep dead-letters each with the reason, so it exists from the start.
resource notifyPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: names.notifyPoisonQueue
}

// Partitions 1..partitions-1 (partition 0 keeps the two queues above): names as in shared/names.py.
var partitionEventQueueNames = [for p in range(1, partitions - 1): '${names.eventQueue}-p${p}']

resource partitionEventQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for p in range(1, partitions - 1): {
    parent: queueService
    name: '${names.eventQueue}-p${p}'
  }
]

resource partitionPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for p in range(1, partitions - 1): {
    parent: queueService
    name: '${names.eventQueue}-p${p}-poison'
  }
]

resource taskQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for queueName in taskQueueNames: {
    parent: queueService
    name: queueName
  }
]

// Diagnostic settings: every write and delete of blobs, queues and tables (who changed what, with
// which identity) and the transaction metrics, to the Log Analytics workspace. Not StorageRead:
// idle workers and the sweep read all day (~170k receives per idle worker and queue at a 0.5 s
// poll), and every read would be a billed log row (infra/README.md, "Idle cost"); the
// Transaction metric still counts reads, free.
var storageLogs = [
  {
    category: 'StorageWrite'
    enabled: true
  }
  {
    category: 'StorageDelete'
    enabled: true
  }
]
var transactionMetrics = [
  {
    category: 'Transaction'
    enabled: true
  }
]

resource accountDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(logAnalyticsWorkspaceId)) {
  name: 'to-log-analytics'
  scope: storage
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    metrics: transactionMetrics
  }
}

resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(logAnalyticsWorkspaceId)) {
  name: 'to-log-analytics'
  scope: blobService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: storageLogs
    metrics: transactionMetrics
  }
}

resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(logAnalyticsWorkspaceId)) {
  name: 'to-log-analytics'
  scope: queueService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: storageLogs
    metrics: transactionMetrics
  }
}

resource tableDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(logAnalyticsWorkspaceId)) {
  name: 'to-log-analytics'
  scope: tableService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: storageLogs
    metrics: transactionMetrics
  }
}

output name string = storage.name
output id string = storage.id
output blobEndpoint string = storage.properties.primaryEndpoints.blob
output queueEndpoint string = storage.properties.primaryEndpoints.queue
output tableEndpoint string = storage.properties.primaryEndpoints.table
output workflowsContainerName string = names.workflowsContainer
output outputsContainerName string = names.outputsContainer
output deadletterContainerName string = names.deadletterContainer
output cacheContainerName string = names.cacheContainer
output indexTableName string = names.indexTable
output registryTableName string = names.registryTable
output schedulesTableName string = names.schedulesTable
output eventQueueName string = names.eventQueue
// Every event queue workers send completions to (one per coordinator partition): identity.bicep
// gives the worker identity Message Sender on each.
output eventQueueNames array = concat([names.eventQueue], partitionEventQueueNames)
output eventPoisonQueueName string = names.eventPoisonQueue
output taskQueueNames array = taskQueueNames
