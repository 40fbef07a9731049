// dagq on Azure: storage, monitoring, managed identities with their roles, the Function App on Flex
// Consumption, and optionally a pool of GPU worker VMs. Deploy with `azd up`, or with
// `az deployment sub create --location <region> --template-file infra/main.bicep --parameters ...`
// (infra/README.md walks through both).
targetScope = 'subscription'

@description('Environment name (azd sets it): names the resource group and seeds unique resource names.')
@minLength(1)
@maxLength(64)
param environmentName string

@description('Azure region of every resource.')
@minLength(1)
param location string

@description('Resource group to create or reuse; default rg-<environmentName>.')
param resourceGroupName string = ''

@description('Object id of a user or service principal that gets storage data roles for the CLI and local runs (azd sets your own); empty: none.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
  'Group'
])
param principalType string = 'User'

// -- dagq ------------------------------------------------------------------------------------------

@description('Namespaces every dagq container, table and queue (DAGQ_PREFIX): 2-20 lowercase letters and digits, starting with a letter.')
@minLength(2)
@maxLength(20)
param prefix string = 'dagq'

@description('Task queues to create up front, as named in workflow definitions (more are created on demand).')
param taskQueues array = [
  'cpu'
  'gpu'
]

@description('NCRONTAB schedule (seconds first) of the sweep timer (DAGQ_SWEEP_SCHEDULE). Every run bills a little: see "Idle cost" in infra/README.md.')
param sweepSchedule string = '*/5 * * * * *'

@description('Allow account-key and SAS access to the storage account. Off: Entra ID only.')
param allowSharedKeyAccess bool = false

// -- Function App ----------------------------------------------------------------------------------

@description('Most instances per Flex Consumption scale group (the coordinator is a singleton anyway).')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 10

@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

// -- GPU worker pool (VM Scale Set), optional -----------------------------------------------------

@description('Create a VM Scale Set of worker VMs.')
param deployGpuPool bool = false

@description('pip requirement that installs the worker agent on the VMs, e.g. "dagq[worker] @ https://<host>/dagq-0.1.0-py3-none-any.whl" (required with deployGpuPool).')
param workerPackage string = ''

@description('SSH public key of the VMs\' admin user (required with deployGpuPool).')
@secure()
param gpuAdminSshPublicKey string = ''

param gpuVmSku string = 'Standard_NC4as_T4_v3'

@minValue(0)
@maxValue(1000)
param gpuCapacity int = 1

@allowed([
  'Spot'
  'Regular'
])
param gpuPriority string = 'Spot'

@allowed([
  'Delete'
  'Deallocate'
])
param gpuEvictionPolicy string = 'Delete'

@description('Highest Spot price per hour in US dollars, as a string; -1: up to the regular price.')
param gpuMaxPrice string = '-1'

@description('Queues the VMs serve, one systemd service each.')
param gpuQueues array = [
  'gpu'
]

// -- retention (infra/modules/retention.bicep; docs/operations.md) ---------------------------------

@description('Days after their last write that task outputs and logs are deleted by the blob lifecycle policy.')
@minValue(1)
param outputsRetentionDays int = 90

@description('Days after which dead-lettered events are deleted by the blob lifecycle policy.')
@minValue(1)
param deadletterRetentionDays int = 30

// -- AKS workers, optional -----------------------------------------------------------------------

@description('OIDC issuer URL of an AKS cluster (az aks show --query oidcIssuerProfile.issuerUrl): federates the worker identity with the pods in infra/aks/ and with KEDA. Empty: no AKS.')
param aksOidcIssuerUrl string = ''

var tags = {
  'azd-env-name': environmentName
  app: 'dagq'
}
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var names = {
  resourceGroup: empty(resourceGroupName) ? 'rg-${environmentName}' : resourceGroupName
  storageAccount: 'st${resourceToken}'
  logAnalytics: 'log-${resourceToken}'
  applicationInsights: 'appi-${resourceToken}'
  appIdentity: 'id-app-${resourceToken}'
  workerIdentity: 'id-worker-${resourceToken}'
  plan: 'plan-${resourceToken}'
  functionApp: 'func-${resourceToken}'
  deploymentContainer: 'app-package'
  gpuPool: 'vmss-gpu-${resourceToken}'
}

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: names.resourceGroup
  location: location
  tags: tags
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    location: location
    accountName: names.storageAccount
    prefix: prefix
    taskQueues: taskQueues
    allowSharedKeyAccess: allowSharedKeyAccess
    deploymentContainerName: names.deploymentContainer
    tags: tags
  }
}

module retention 'modules/retention.bicep' = {
  name: 'retention'
  scope: rg
  params: {
    storageAccountName: storage.outputs.name
    prefix: prefix
    outputsRetentionDays: outputsRetentionDays
    deadletterRetentionDays: deadletterRetentionDays
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    location: location
    logAnalyticsName: names.logAnalytics
    applicationInsightsName: names.applicationInsights
    tags: tags
  }
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    location: location
    appIdentityName: names.appIdentity
    workerIdentityName: names.workerIdentity
    storageAccountName: storage.outputs.name
    workflowsContainerName: storage.outputs.workflowsContainerName
    outputsContainerName: storage.outputs.outputsContainerName
    deadletterContainerName: storage.outputs.deadletterContainerName
    principalId: principalId
    principalType: principalType
    aksOidcIssuerUrl: aksOidcIssuerUrl
    tags: tags
  }
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  scope: rg
  params: {
    location: location
    planName: names.plan
    appName: names.functionApp
    tags: tags
    appIdentityId: identity.outputs.appIdentityId
    appIdentityClientId: identity.outputs.appIdentityClientId
    storageAccountName: storage.outputs.name
    blobEndpoint: storage.outputs.blobEndpoint
    queueEndpoint: storage.outputs.queueEndpoint
    tableEndpoint: storage.outputs.tableEndpoint
    deploymentContainerName: names.deploymentContainer
    prefix: prefix
    eventQueueName: storage.outputs.eventQueueName
    sweepSchedule: sweepSchedule
    applicationInsightsConnectionString: monitoring.outputs.connectionString
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
  }
}

module gpuPool 'modules/gpu-vmss.bicep' = if (deployGpuPool) {
  name: 'gpu-pool'
  scope: rg
  params: {
    location: location
    name: names.gpuPool
    tags: tags
    vmSku: gpuVmSku
    capacity: gpuCapacity
    priority: gpuPriority
    evictionPolicy: gpuEvictionPolicy
    maxPrice: gpuMaxPrice
    adminSshPublicKey: gpuAdminSshPublicKey
    workerIdentityId: identity.outputs.workerIdentityId
    workerIdentityClientId: identity.outputs.workerIdentityClientId
    storageAccountName: storage.outputs.name
    prefix: prefix
    applicationInsightsConnectionString: monitoring.outputs.connectionString
    workerPackage: workerPackage
    queues: gpuQueues
  }
}

// azd stores every output in the environment (azd env get-values); the names match what dagq
// reads, so `eval "$(azd env get-values)"` configures the CLI and a local worker.
output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = functionApp.outputs.name
output DAGQ_API_URL string = functionApp.outputs.url
output DAGQ_STORAGE_ACCOUNT string = storage.outputs.name
output DAGQ_PREFIX string = prefix
output APPLICATIONINSIGHTS_NAME string = monitoring.outputs.applicationInsightsName
output APPLICATIONINSIGHTS_CONNECTION_STRING string = monitoring.outputs.connectionString
output WORKER_IDENTITY_ID string = identity.outputs.workerIdentityId
output WORKER_CLIENT_ID string = identity.outputs.workerIdentityClientId
output GPU_POOL_NAME string = deployGpuPool ? names.gpuPool : ''
// The command that starts a worker for the GPU queues: on a VM or pod that carries the worker
// identity (AZURE_CLIENT_ID selects it), or on any machine where `az login` has the data roles.
output WORKER_COMMAND string = 'AZURE_CLIENT_ID=${identity.outputs.workerIdentityClientId} dagq-worker ${join(gpuQueues, ' ')} --account ${storage.outputs.name} --prefix ${prefix} --gpus auto'
