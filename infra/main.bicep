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

@description('Kind of principalId: User (azd up from a workstation) or ServicePrincipal (CI); azd passes AZURE_PRINCIPAL_TYPE.')
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

@description('The app\'s private Ed25519 key that signs task messages and control events (DAGQ_SIGNING_KEY; python -m shared.signing makes a pair; azure.yaml\'s preprovision hook makes one per environment). Empty: nothing is signed, and workers run unsigned messages.')
@secure()
param messageSigningKey string = ''

@description('The app\'s public key(s), comma-separated (DAGQ_VERIFY_KEYS): workers verify task messages with them. Two during a rotation (docs/operations.md).')
param messageVerifyKeys string = ''

@description('Coordinator partitions (DAGQ_PARTITIONS): each has its own event queue, poison queue, lease and queue trigger. Raise it to scale out; lowering it strands workflows of the removed partitions (docs/capacity.md).')
@minValue(1)
@maxValue(64)
param partitions int = 1

@description('Task queues to create up front, as named in workflow definitions (more are created on demand).')
param taskQueues array = [
  'cpu'
  'gpu'
]

@description('NCRONTAB schedule (seconds first) of the sweep timer (DAGQ_SWEEP_SCHEDULE); the default is shared/settings.py\'s. Flex Consumption bills every run at least 1 s: see "Idle cost" in infra/README.md.')
param sweepSchedule string = '*/30 * * * * *'

@description('Allow account-key and SAS access to the storage account. Off: Entra ID only.')
param allowSharedKeyAccess bool = false

@description('Storage public network access: Enabled (quick start) or Disabled (private endpoints only; see storagePrivateEndpointSubnetId).')
@allowed([
  'Enabled'
  'Disabled'
])
param storagePublicNetworkAccess string = 'Enabled'

@description('Storage network rule default: Allow (quick start) or Deny (only storageAllowedIpRanges, storageAllowedSubnetIds, private endpoints and trusted Azure services).')
@allowed([
  'Allow'
  'Deny'
])
param storageNetworkDefaultAction string = 'Allow'

@description('Public IPs / CIDR ranges allowed to reach storage when storageNetworkDefaultAction is Deny.')
param storageAllowedIpRanges array = []

@description('Subnet ids (Microsoft.Storage service endpoint) allowed to reach storage when storageNetworkDefaultAction is Deny.')
param storageAllowedSubnetIds array = []

@description('Subnet for private endpoints (blob, queue, table) of the storage account; empty: none.')
param storagePrivateEndpointSubnetId string = ''

@description('Private DNS zone ids for the private endpoints: {blob: ..., queue: ..., table: ...}.')
param storagePrivateDnsZoneIds object = {}

// -- Function App ----------------------------------------------------------------------------------

@description('Most instances per Flex Consumption scale group. 40 is the lowest maximum Microsoft documents for every region (infra/README.md, "App settings").')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 40

@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Entra ID in front of the API (App Service authentication): application (client) id of the app registration whose tokens it accepts. Empty: function keys only.')
param apiAuthClientId string = ''

@description('Subnet (delegated to Microsoft.App/environments) for the Function App\'s VNet integration; needed when storage is private. Empty: none.')
param appSubnetId string = ''

// -- GPU worker pool (VM Scale Set), optional -----------------------------------------------------

@description('Create a VM Scale Set of worker VMs.')
param deployGpuPool bool = false

@description('pip requirement that installs the worker agent on the VMs, e.g. "dagq[worker] @ https://<host>/dagq-0.1.0-py3-none-any.whl" (required with deployGpuPool).')
param workerPackage string = ''

@description('SSH public key of the VMs\' admin user (required with deployGpuPool).')
@secure()
param gpuAdminSshPublicKey string = ''

param gpuVmSku string = 'Standard_NC4as_T4_v3'

@description('Fewest GPU VMs (autoscale on the GPU queues removes idle VMs down to this; 0: no cost while idle).')
@minValue(0)
@maxValue(1000)
param gpuMinCapacity int = 0

@description('The GPU pool exists already: provisioning then leaves its VM count alone (otherwise each provision resets it to gpuMinCapacity and deletes the VMs beyond, busy or not). azd sets DAGQ_GPU_POOL_EXISTS after the provision that creates the pool (azure.yaml, postprovision); with az, pass true once the pool is there.')
param gpuPoolExists bool = false

@description('Most GPU VMs autoscale starts when tasks wait.')
@minValue(1)
@maxValue(1000)
param gpuMaxCapacity int = 4

@description('Custom VM image id (Compute Gallery image version or managed image) with your environment baked in; empty: Ubuntu 24.04 from the marketplace.')
param gpuImageId string = ''

@description('Install NVIDIA\'s driver on first boot (false for an image that has it).')
param gpuInstallNvidiaDriver bool = true

@description('Base64 (base64 -w0 setup.sh) of a shell script run as root on each GPU VM\'s first boot before the workers start: your task environment (docs/azure-gpu-quickstart.md).')
param gpuSetupScriptBase64 string = ''

@allowed([
  'Spot'
  'Regular'
])
param gpuPriority string = 'Spot'

@description('Spot eviction policy: Delete only (a deallocated VM still counts toward capacity, so autoscale would not replace it).')
@allowed([
  'Delete'
])
param gpuEvictionPolicy string = 'Delete'

@description('Highest Spot price per hour in US dollars, as a string; -1: up to the regular price.')
param gpuMaxPrice string = '-1'

@description('Queues the VMs serve, one systemd service each (each must also be in taskQueues: workers may use only the queues they have a role on).')
param gpuQueues array = [
  'gpu'
]

@description('User the VMs run tasks as (DAGQ_WORKER_TASK_USER): not the agent\'s user, so tasks read neither /etc/dagq/worker.env nor the agent\'s environment, and the VM firewall keeps them off the instance metadata service.')
param gpuTaskUser string = 'dagq-task'

// -- retention (infra/modules/retention.bicep; docs/operations.md) ---------------------------------

@description('Days after their last write that task outputs and logs are deleted by the blob lifecycle policy.')
@minValue(1)
param outputsRetentionDays int = 90

@description('Days after which dead-lettered events are deleted by the blob lifecycle policy.')
@minValue(1)
param deadletterRetentionDays int = 30

// -- alerts (infra/modules/alerts.bicep; infra/README.md, "Alerts") -------------------------------

@description('Email address that receives dagq\'s alerts (failed functions, dead letters, poison queues, work waiting with no worker, workers lost or crash-looping); empty: alerts show in the portal only.')
param alertEmail string = ''

@description('Resource id of an existing action group that also receives the alerts; empty: none.')
param alertActionGroupId string = ''

// -- AKS workers, optional -----------------------------------------------------------------------

@description('OIDC issuer URL of an AKS cluster (az aks show --query oidcIssuerProfile.issuerUrl): federates the worker identity with the pods in infra/aks/ and with KEDA. Empty: no AKS.')
param aksOidcIssuerUrl string = ''

// A GPU pool whose agents cannot start is refused at deploy time, with the reason (fail() stops
// the deployment with this message; infra/README.md lists the required values).
@description('Create an Event Grid custom topic that receives every workflow\'s end and each task\'s final failure as CloudEvents (DAGQ_EVENTGRID_ENDPOINT; docs/notifications.md). The app publishes with its identity (EventGrid Data Sender on the topic).')
param eventGridTopic bool = false

var gpuPoolNeedsPackage = 'deployGpuPool=true needs workerPackage (the pip requirement that installs dagq[worker] on the VMs, e.g. "dagq[worker] @ https://<host>/dagq-0.1.0-py3-none-any.whl"): azd env set DAGQ_WORKER_PACKAGE ...'
var gpuPoolNeedsKey = 'deployGpuPool=true needs gpuAdminSshPublicKey (the VMs\' admin SSH public key): azd env set DAGQ_GPU_SSH_PUBLIC_KEY "$(cat ~/.ssh/id_ed25519.pub)"'
var gpuPoolNeedsQueues = 'every queue in gpuQueues (${join(gpuQueues, ', ')}) must also be in taskQueues (${join(taskQueues, ', ')}): workers hold roles only on those queues'
var gpuQueuesKnown = length(intersection(gpuQueues, taskQueues)) == length(gpuQueues)
var gpuPoolProblem = deployGpuPool ? (empty(workerPackage) ? gpuPoolNeedsPackage : (empty(gpuAdminSshPublicKey) ? gpuPoolNeedsKey : (gpuQueuesKnown ? '' : gpuPoolNeedsQueues))) : ''

// A storage account the app or the pool cannot reach is refused the same way. The Function App
// reaches a closed account only from its VNet (appSubnetId: with Deny the subnet is allowed below
// and needs the Microsoft.Storage service endpoint; with Disabled it must reach the private
// endpoints). The pool's own VNet is allowed with Deny, but has no route to private endpoints.
var storageClosed = (storageNetworkDefaultAction == 'Deny') || (storagePublicNetworkAccess == 'Disabled')
var storageNeedsAppSubnet = 'storageNetworkDefaultAction=Deny or storagePublicNetworkAccess=Disabled needs appSubnetId: the Function App reaches a closed storage account only through its VNet integration (a subnet delegated to Microsoft.App/environments; with Deny it also needs the Microsoft.Storage service endpoint, and is then allowed in the account\'s network rules)'
var storageNeedsEndpoints = 'storagePublicNetworkAccess=Disabled needs storagePrivateEndpointSubnetId (and storagePrivateDnsZoneIds): without private endpoints nothing can reach the account'
var storagePrivateWithPool = 'deployGpuPool=true cannot be combined with storagePublicNetworkAccess=Disabled: the pool\'s own VNet has no route to the private endpoints (no peering, no private DNS). Use storageNetworkDefaultAction=Deny instead (the pool\'s subnet is allowed through its service endpoint), or run workers inside the private network (AKS, infra/README.md)'
var storagePrivate = storagePublicNetworkAccess == 'Disabled'
var storageNetworkProblem = (storageClosed && empty(appSubnetId)) ? storageNeedsAppSubnet : ((storagePrivate && empty(storagePrivateEndpointSubnetId)) ? storageNeedsEndpoints : ((storagePrivate && deployGpuPool) ? storagePrivateWithPool : ''))

// With Deny, the account's network rules allow the given subnets, the app's and the pool's.
var storageDeny = storageNetworkDefaultAction == 'Deny'
var storageSubnetRules = storageDeny ? concat(storageAllowedSubnetIds, empty(appSubnetId) ? [] : [appSubnetId], deployGpuPool ? [gpuNetwork.outputs.subnetId] : []) : storageAllowedSubnetIds

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
  eventGridTopic: 'evgt-${resourceToken}'
}

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: names.resourceGroup
  location: location
  tags: tags
}

// The pool's network comes before the storage account, whose network rules may allow its subnet.
module gpuNetwork 'modules/gpu-network.bicep' = if (deployGpuPool) {
  name: 'gpu-network'
  scope: rg
  params: {
    location: location
    name: names.gpuPool
    tags: tags
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    location: location
    accountName: names.storageAccount
    prefix: prefix
    partitions: partitions
    taskQueues: taskQueues
    allowSharedKeyAccess: allowSharedKeyAccess
    deploymentContainerName: names.deploymentContainer
    publicNetworkAccess: storagePublicNetworkAccess
    networkDefaultAction: empty(storageNetworkProblem) ? storageNetworkDefaultAction : fail(storageNetworkProblem)
    allowedIpRanges: storageAllowedIpRanges
    allowedSubnetIds: storageSubnetRules
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsWorkspaceId
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

module storagePrivateEndpoints 'modules/storage-private-endpoints.bicep' = if (!empty(storagePrivateEndpointSubnetId)) {
  name: 'storage-private-endpoints'
  scope: rg
  params: {
    location: location
    tags: tags
    storageAccountId: storage.outputs.id
    storageAccountName: storage.outputs.name
    subnetId: storagePrivateEndpointSubnetId
    privateDnsZoneIds: storagePrivateDnsZoneIds
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

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  scope: rg
  params: {
    location: location
    tags: tags
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsWorkspaceId
    prefix: prefix
    alertEmail: alertEmail
    actionGroupId: alertActionGroupId
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
    cacheContainerName: storage.outputs.cacheContainerName
    deploymentContainerName: names.deploymentContainer
    registryTableName: storage.outputs.registryTableName
    taskQueueNames: storage.outputs.taskQueueNames
    eventQueueNames: storage.outputs.eventQueueNames
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    principalId: principalId
    principalType: principalType
    aksOidcIssuerUrl: aksOidcIssuerUrl
    tags: tags
  }
}

module eventGrid 'modules/eventgrid.bicep' = if (eventGridTopic) {
  name: 'eventgrid'
  scope: rg
  params: {
    location: location
    tags: tags
    topicName: names.eventGridTopic
    appPrincipalId: identity.outputs.appIdentityPrincipalId
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
    partitions: partitions
    sweepSchedule: sweepSchedule
    signingKey: messageSigningKey
    verifyKeys: messageVerifyKeys
    gpuVmSku: deployGpuPool ? gpuVmSku : ''
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsWorkspaceId
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    apiAuthClientId: apiAuthClientId
    virtualNetworkSubnetId: appSubnetId
    eventGridEndpoint: eventGridTopic ? eventGrid.outputs.endpoint : ''
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
    poolExists: gpuPoolExists
    minCapacity: gpuMinCapacity
    maxCapacity: gpuMaxCapacity
    imageId: gpuImageId
    installNvidiaDriver: gpuInstallNvidiaDriver
    setupScriptBase64: gpuSetupScriptBase64
    priority: gpuPriority
    evictionPolicy: gpuEvictionPolicy
    maxPrice: gpuMaxPrice
    adminSshPublicKey: empty(gpuPoolProblem) ? gpuAdminSshPublicKey : fail(gpuPoolProblem)
    workerIdentityId: identity.outputs.workerIdentityId
    workerIdentityClientId: identity.outputs.workerIdentityClientId
    subnetId: gpuNetwork.outputs.subnetId
    nsgId: gpuNetwork.outputs.nsgId
    storageAccountName: storage.outputs.name
    prefix: prefix
    verifyKeys: messageVerifyKeys
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    workerPackage: empty(gpuPoolProblem) ? workerPackage : fail(gpuPoolProblem)
    queues: gpuQueues
    taskUser: gpuTaskUser
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
// Workers elsewhere (AKS, a laptop) verify task messages with it (infra/aks/*.yaml).
output DAGQ_VERIFY_KEYS string = messageVerifyKeys
output APPLICATIONINSIGHTS_NAME string = monitoring.outputs.applicationInsightsName
// The App Insights connection string is not an output (deployment outputs are readable by anyone
// with read access to the deployment); read it with az (infra/README.md, "Workers on AKS").
// The token scope the CLI asks for when Entra ID protects the API (shared/client/entra.py).
output DAGQ_API_SCOPE string = functionApp.outputs.apiScope
output WORKER_IDENTITY_ID string = identity.outputs.workerIdentityId
output WORKER_CLIENT_ID string = identity.outputs.workerIdentityClientId
output DAGQ_EVENTGRID_ENDPOINT string = eventGridTopic ? eventGrid.outputs.endpoint : ''
output GPU_POOL_NAME string = deployGpuPool ? names.gpuPool : ''
// The command that starts a worker for the GPU queues: on a VM or pod that carries the worker
// identity (AZURE_CLIENT_ID selects it), or on any machine where `az login` has the data roles.
output WORKER_COMMAND string = 'AZURE_CLIENT_ID=${identity.outputs.workerIdentityClientId} dagq-worker ${join(gpuQueues, ' ')} --account ${storage.outputs.name} --prefix ${prefix} --gpus auto'
