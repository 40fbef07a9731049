// An optional pool of GPU worker VMs: a VM Scale Set (Spot or regular) whose instances run the
// dagq worker agent, one systemd service per queue, set up by cloud-init
// (infra/cloud-init/worker.yaml). Workers only pull from storage: no inbound port is open.

param location string
param name string
param tags object = {}

@description('VM size, e.g. Standard_NC4as_T4_v3 (1x T4), Standard_NC24ads_A100_v4 (1x A100).')
param vmSku string = 'Standard_NC4as_T4_v3'

@description('Number of VMs. Scale later with: az vmss scale --new-capacity N.')
@minValue(0)
@maxValue(1000)
param capacity int = 1

@description('Spot VMs are much cheaper and can be evicted at any time (the agent hands its tasks back).')
@allowed([
  'Spot'
  'Regular'
])
param priority string = 'Spot'

@description('What eviction does to a Spot VM: Delete (no cost after) or Deallocate (keeps the disk, costs storage).')
@allowed([
  'Delete'
  'Deallocate'
])
param evictionPolicy string = 'Delete'

@description('Highest price per hour in US dollars for a Spot VM, as a string; -1: up to the regular price.')
param maxPrice string = '-1'

@description('Time a scale-in or delete waits for the agent after the Terminate scheduled event (PT5M-PT15M).')
param terminateNotBeforeTimeout string = 'PT10M'

param adminUsername string = 'azureuser'

@description('SSH public key of the admin user (password login is disabled). Required: main.bicep refuses an empty one with a message (fail()).')
@secure()
@minLength(1)
param adminSshPublicKey string

param imagePublisher string = 'Canonical'
param imageOffer string = 'ubuntu-24_04-lts'
param imageSku string = 'server'

@description('Install NVIDIA\'s data-center driver from Ubuntu\'s archive on first boot.')
param installNvidiaDriver bool = true

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

@description('GPUs the agents hand out (DAGQ_WORKER_GPUS): "auto" asks nvidia-smi; empty leaves CUDA_VISIBLE_DEVICES alone.')
param workerGpus string = 'auto'

@description('On shutdown or eviction, how long running tasks get to finish before they are handed back.')
@minValue(0)
param shutdownGraceSeconds int = 120

var addressPrefix = '10.42.0.0/16'
var subnetPrefix = '10.42.0.0/24'

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
var cloudInit = cloudInit12

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource nsg 'Microsoft.Network/networkSecurityGroups@2023-11-01' = {
  name: '${name}-nsg'
  location: location
  tags: tags
  properties: {
    // No rules of our own: the defaults deny all inbound traffic from the internet.
    securityRules: []
  }
}

resource vnet 'Microsoft.Network/virtualNetworks@2023-11-01' = {
  name: '${name}-vnet'
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    subnets: [
      {
        name: 'workers'
        properties: {
          addressPrefix: subnetPrefix
          networkSecurityGroup: {
            id: nsg.id
          }
          // Lets the storage account allow this subnet when its network rules deny by default.
          serviceEndpoints: [
            {
              service: 'Microsoft.Storage'
            }
          ]
        }
      }
    ]
  }
}

resource vmss 'Microsoft.Compute/virtualMachineScaleSets@2024-03-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: vmSku
    tier: 'Standard'
    capacity: capacity
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
    virtualMachineProfile: {
      priority: priority
      evictionPolicy: priority == 'Spot' ? evictionPolicy : null
      billingProfile: priority == 'Spot' ? {
        maxPrice: json(maxPrice)
      } : null
      scheduledEventsProfile: {
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
        imageReference: {
          publisher: imagePublisher
          offer: imageOffer
          sku: imageSku
          version: 'latest'
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
                id: nsg.id
              }
              ipConfigurations: [
                {
                  name: 'ipconfig'
                  properties: {
                    subnet: {
                      id: vnet.properties.subnets[0].id
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

output name string = vmss.name
output subnetId string = vnet.properties.subnets[0].id
