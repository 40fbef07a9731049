// An optional pool of GPU worker VMs: a VM Scale Set (Spot or regular) whose instances run the
// dagq worker agent, one systemd service per queue, set up by cloud-init
// (infra/cloud-init/worker.yaml). Workers only pull from storage: no inbound port is open.

param location string
param name string
param tags object = {}

@description('VM size, e.g. Standard_NC4as_T4_v3 (1x T4), Standard_NC24ads_A100_v4 (1x A100).')
param vmSku string = 'Standard_NC4as_T4_v3'

@description('Fewest VMs: autoscale removes idle VMs down to this (0: the pool costs nothing while its queues are empty).')
@minValue(0)
@maxValue(1000)
param minCapacity int = 0

@description('The scale set exists already (a later provision): the template then sets no VM count, so a deployment leaves the live pool as autoscale made it. With false, every deployment resets the pool to minCapacity and deletes VMs beyond it, busy or not.')
param poolExists bool = false

@description('Most VMs autoscale starts.')
@minValue(1)
@maxValue(1000)
param maxCapacity int = 4

@description('Queued tasks per VM before autoscale adds one: the agents\' task slots on one VM (DAGQ_WORKER_CONCURRENCY, or its GPUs / gpus per task).')
@minValue(1)
param tasksPerVm int = 1

@description('Minutes during which every pool queue held fewer tasks (queued or running) than the pool has VMs before autoscale removes one VM. Autoscale reads the count per VM, so this means some VM had nothing to do, not that the queues were empty; it cannot tell which VM is idle, so busy VMs protect themselves from scale-in (worker_agent/scale_in.py).')
@minValue(5)
param scaleInIdleMinutes int = 15

@description('Spot VMs are much cheaper and can be evicted at any time (the agent hands its tasks back).')
@allowed([
  'Spot'
  'Regular'
])
param priority string = 'Spot'

@description('What eviction does to a Spot VM: Delete only. A deallocated VM still counts toward the scale set\'s capacity (and quota), so autoscale would never replace it (Microsoft: use Delete with autoscale).')
@allowed([
  'Delete'
])
param evictionPolicy string = 'Delete'

@description('Highest price per hour in US dollars for a Spot VM, as a string; -1: up to the regular price.')
param maxPrice string = '-1'

@description('Regular VMs only: time a scale-in or delete waits for the agent after the Terminate scheduled event (PT5M-PT15M). Terminate notifications cannot be enabled on Spot VMs; a Spot VM\'s notice is its Preempt event (30 s).')
param terminateNotBeforeTimeout string = 'PT10M'

param adminUsername string = 'azureuser'

@description('SSH public key of the admin user (password login is disabled). Required: main.bicep refuses an empty one with a message (fail()).')
@secure()
@minLength(1)
param adminSshPublicKey string

param imagePublisher string = 'Canonical'
param imageOffer string = 'ubuntu-24_04-lts'
param imageSku string = 'server'

@description('Resource id of a custom image (Azure Compute Gallery image version or managed image) with your environment baked in (CUDA, conda, your code); replaces the marketplace image above. With the driver in the image, set installNvidiaDriver false.')
param imageId string = ''

@description('Base64 of a shell script run as root on first boot, after the agent is installed and before the workers start: set up the task environment (e.g. a conda environment, git clone of your code). Base64 (base64 -w0 setup.sh) so that any script survives azd\'s and az\'s parameter files. docs/azure-gpu-quickstart.md has an example; empty: none.')
param setupScriptBase64 string = ''

@description('Longest wait between polls of empty queues (DAGQ_WORKER_MAX_POLL_S): one receive per queue and agent every this many seconds while idle.')
@minValue(1)
param idlePollSeconds int = 5

@description('Install NVIDIA\'s data-center driver from Ubuntu\'s archive on first boot.')
param installNvidiaDriver bool = true

@description('Subnet of the VMs (gpu-network.bicep: its own VNet, deployed before the storage account so that a storage firewall can allow it).')
param subnetId string

@description('Network security group of the VMs\' NICs (gpu-network.bicep: no inbound rule).')
param nsgId string

@description('Resource id of the workers\' user-assigned managed identity.')
param workerIdentityId string

@description('Client id of the workers\' user-assigned managed identity.')
param workerIdentityClientId string

param storageAccountName string
param prefix string

@description('Application Insights component the agents report to (its connection string is read here, never passed around).')
param applicationInsightsName string

@description('pip requirement that installs the worker agent, e.g. "dagq[worker] @ https://<host>/dagq-0.1.0-py3-none-any.whl" or "dagq[worker] @ git+https://github.com/<org>/dagq@<tag>". Required: main.bicep refuses an empty one with a message (fail()).')
@minLength(1)
param workerPackage string

@description('pip constraints the VMs install with: the repository\'s constraints.txt, the versions CI tested.')
param workerConstraints string = loadTextContent('../../constraints.txt')

@description('User tasks run as (DAGQ_WORKER_TASK_USER); the agent runs as root to start them as this user and to give each task its own cgroup.')
param taskUser string = 'dagq-task'

@description('Queues this pool serves, as named in workflow definitions; one systemd service each.')
param queues array = [
  'gpu'
]

@description('The app\'s public key(s) the agents verify task messages with (DAGQ_VERIFY_KEYS; shared/signing): an unsigned or forged message is dead-lettered, never run.')
param verifyKeys string = ''

@description('GPUs the agents hand out (DAGQ_WORKER_GPUS): "auto" asks nvidia-smi; empty leaves CUDA_VISIBLE_DEVICES alone.')
param workerGpus string = 'auto'

@description('On shutdown or eviction, how long running tasks get to finish before they are handed back.')
@minValue(0)
param shutdownGraceSeconds int = 120

// systemd waits this long after SIGTERM: the task grace, the agent's kill grace and a margin for
// the last uploads and the hand-back.
var stopTimeoutSeconds = shutdownGraceSeconds + 60

// Fill in every {{placeholder}} of the cloud-init template, one replace() per value.
var cloudInit0 = loadTextContent('../cloud-init/worker.yaml')
var cloudInit1 = replace(cloudInit0, '{{storageAccount}}', storageAccountName)
var cloudInit2 = replace(cloudInit1, '{{workerClientId}}', workerIdentityClientId)
var cloudInit3 = replace(cloudInit2, '{{prefix}}', prefix)
var cloudInit4 = replace(cloudInit3, '{{appInsightsConnectionString}}', applicationInsights.properties.ConnectionString)
var cloudInit5 = replace(cloudInit4, '{{workerGpus}}', workerGpus)
var cloudInit6 = replace(cloudInit5, '{{shutdownGraceSeconds}}', string(shutdownGraceSeconds))
var cloudInit7 = replace(cloudInit6, '{{stopTimeoutSeconds}}', string(stopTimeoutSeconds))
var cloudInit8 = replace(cloudInit7, '{{workerPackage}}', workerPackage)
// Never string() a bool for a shell: ARM's string(true) is 'True' (it formats like .NET), and the
// driver script compares with "true". tests/infra/test_provisioning.py runs the script both ways.
var cloudInit9 = replace(cloudInit8, '{{installNvidiaDriver}}', installNvidiaDriver ? 'true' : 'false')
var cloudInit10 = replace(cloudInit9, '{{queues}}', join(queues, ' '))
var cloudInit11 = replace(cloudInit10, '{{taskUser}}', taskUser)
// The constraints go into an indented YAML block: every line gets the block's indentation.
var cloudInit12 = replace(cloudInit11, '{{workerConstraints}}', replace(trim(workerConstraints), '\n', '\n      '))
// The setup script stays base64-encoded up to the VM (write_files encoding b64): any text is safe
// in the YAML, whatever quotes or indentation it has.
var cloudInit13 = replace(cloudInit12, '{{setupScriptBase64}}', setupScriptBase64)
var cloudInit14 = replace(cloudInit13, '{{idlePollSeconds}}', string(idlePollSeconds))
var cloudInit15 = replace(cloudInit14, '{{verifyKeys}}', verifyKeys)
// The agents note the VM size with the VM's uptime: `dagq cost` prices the pool's VM-hours by it.
var cloudInit16 = replace(cloudInit15, '{{vmSize}}', vmSku)
var cloudInit = cloudInit16

// The Azure queue of each pool queue, as shared/names.py names it (ResourceNames.task_queue).
var queueResourceNames = [for queue in queues: '${prefix}-q-${toLower(replace(queue, '_', '-'))}']
var spot = priority == 'Spot'

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource vmss 'Microsoft.Compute/virtualMachineScaleSets@2024-03-01' = {
  // checkov:skip=CKV_AZURE_95: workers scale to zero and each new VM boots the latest image (version latest, or your imageId); automatic OS upgrades need a rolling upgrade policy and would restart VMs under running tasks
  // checkov:skip=CKV_AZURE_97: encryption at host needs the EncryptionAtHost feature registered on the subscription, which would break a first deployment; disks are encrypted at rest by the platform
  name: name
  location: location
  tags: tags
  // A deployment that sets sku.capacity resets a live pool to it: only a new scale set gets one.
  // Autoscale (below) owns the count from then on.
  sku: poolExists ? {
    name: vmSku
    tier: 'Standard'
  } : {
    name: vmSku
    tier: 'Standard'
    capacity: minCapacity
  }
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${workerIdentityId}': {}
    }
  }
  properties: {
    orchestrationMode: 'Uniform'
    // Overprovisioned extra VMs would boot, start agents that take tasks, and then be deleted.
    overprovision: false
    singlePlacementGroup: false
    upgradePolicy: {
      mode: 'Manual'
    }
    // Newest first (the oldest have warm caches); busy VMs are protected (below). No Spot "try &
    // restore": disabled with autoscale; the autoscale rules replace an evicted (deleted) Spot VM.
    scaleInPolicy: {
      rules: [
        'NewestVM'
      ]
    }
    virtualMachineProfile: {
      priority: priority
      evictionPolicy: spot ? evictionPolicy : null
      billingProfile: spot ? {
        maxPrice: json(maxPrice)
      } : null
      // Terminate notifications "cannot be enabled on Spot instances" (Microsoft's terminate
      // notification doc): only Regular VMs get one; a Spot VM's notice is its Preempt event.
      scheduledEventsProfile: spot ? null : {
        terminateNotificationProfile: {
          enable: true
          notBeforeTimeout: terminateNotBeforeTimeout
        }
      }
      osProfile: {
        computerNamePrefix: 'dagqgpu'
        adminUsername: adminUsername
        customData: base64(cloudInit)
        linuxConfiguration: {
          disablePasswordAuthentication: true
          provisionVMAgent: true
          ssh: {
            publicKeys: [
              {
                path: '/home/${adminUsername}/.ssh/authorized_keys'
                keyData: adminSshPublicKey
              }
            ]
          }
        }
      }
      storageProfile: {
        imageReference: empty(imageId) ? {
          publisher: imagePublisher
          offer: imageOffer
          sku: imageSku
          version: 'latest'
        } : {
          id: imageId
        }
        osDisk: {
          createOption: 'FromImage'
          caching: 'ReadWrite'
          diskSizeGB: 128
          managedDisk: {
            storageAccountType: 'StandardSSD_LRS'
          }
        }
      }
      networkProfile: {
        networkInterfaceConfigurations: [
          {
            name: 'nic'
            properties: {
              primary: true
              networkSecurityGroup: {
                id: nsgId
              }
              ipConfigurations: [
                {
                  name: 'ipconfig'
                  properties: {
                    subnet: {
                      id: subnetId
                    }
                    // Outbound access (storage, pip, apt) through a per-VM public IP; the NSG
                    // keeps every inbound port closed. It costs only while the VM exists.
                    publicIPAddressConfiguration: {
                      name: 'outbound'
                      sku: {
                        name: 'Standard'
                        tier: 'Regional'
                      }
                      properties: {
                        idleTimeoutInMinutes: 15
                      }
                    }
                  }
                }
              ]
            }
          }
        ]
      }
    }
  }
}

// Scale-in protection. Autoscale picks the VM to remove by the scale-in policy (NewestVM), not by
// idleness, so the agents protect their own instance (protectFromScaleIn) while a task runs and
// clear it when the VM is idle (worker_agent/scale_in.py). The worker identity may read and update
// this scale set's instances and nothing else: a custom role with those two actions, assigned on
// the scale set. (Custom roles are assignable at resource group scope at the narrowest; the
// assignment is what limits it to this scale set.) Creating a role definition needs Owner or User
// Access Administrator on the resource group.
var resourceGroupId = resourceGroup().id

resource workerIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: last(split(workerIdentityId, '/'))
}

resource scaleInProtectionRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(resourceGroup().id, name, 'dagq-scale-in-protection')
  properties: {
    roleName: 'dagq scale-in protection (${name})'
    description: 'Lets the dagq worker agents set and clear protectFromScaleIn on their own VM Scale Set instances.'
    type: 'CustomRole'
    permissions: [
      {
        actions: [
          'Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read'
          'Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write'
        ]
        notActions: []
      }
    ]
    assignableScopes: [
      resourceGroupId
    ]
  }
}

resource scaleInProtection 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vmss.id, workerIdentityId, 'dagq-scale-in-protection')
  scope: vmss
  properties: {
    roleDefinitionId: scaleInProtectionRole.id
    principalId: workerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource storageAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

// The pool follows its queues (Azure Monitor autoscale on a Storage queue's message count, a
// metric autoscale reads per instance: "threshold is the number of messages per instance").
// Scale out: any queue holds at least tasksPerVm tasks per VM (autoscale scales out when any rule
// says so). Scale in: every queue has held fewer than one task per VM for the whole of
// scaleInIdleMinutes (all scale-in rules must agree), i.e. there are more VMs than tasks, not
// that the queues are empty. The count includes messages being processed (invisible), so running
// tasks count. Scale-in picks the VM by policy (NewestVM), not by idleness: the agents protect a
// busy VM (protectFromScaleIn, below), so scale-in takes an idle one.
var scaleOutRules = [for queue in queueResourceNames: {
  metricTrigger: {
    metricName: 'ApproximateMessageCount'
    metricNamespace: ''
    metricResourceUri: '${storageAccount.id}/services/queue/queues/${queue}'
    timeGrain: 'PT1M'
    statistic: 'Average'
    timeWindow: 'PT5M'
    timeAggregation: 'Average'
    operator: 'GreaterThanOrEqual'
    threshold: tasksPerVm
  }
  scaleAction: {
    direction: 'Increase'
    type: 'ChangeCount'
    value: '1'
    cooldown: 'PT5M'
  }
}]
var scaleInRules = [for queue in queueResourceNames: {
  metricTrigger: {
    metricName: 'ApproximateMessageCount'
    metricNamespace: ''
    metricResourceUri: '${storageAccount.id}/services/queue/queues/${queue}'
    timeGrain: 'PT1M'
    statistic: 'Max'
    timeWindow: 'PT${scaleInIdleMinutes}M'
    timeAggregation: 'Maximum'
    operator: 'LessThan'
    threshold: 1
  }
  scaleAction: {
    direction: 'Decrease'
    type: 'ChangeCount'
    value: '1'
    // A cooldown blocks scale-out too: keep it short. The idle time is the rule's time window.
    cooldown: 'PT5M'
  }
}]

resource autoscale 'Microsoft.Insights/autoscalesettings@2022-10-01' = {
  name: '${name}-autoscale'
  location: location
  tags: tags
  properties: {
    enabled: true
    targetResourceUri: vmss.id
    profiles: [
      {
        name: 'follow-the-queues'
        capacity: {
          minimum: string(minCapacity)
          maximum: string(maxCapacity)
          default: string(minCapacity)
        }
        rules: concat(scaleOutRules, scaleInRules)
      }
    ]
  }
}

output name string = vmss.name
output id string = vmss.id
output autoscaleName string = autoscale.name
output subnetId string = subnetId
