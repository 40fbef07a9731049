// The GPU pool's network: a VNet with one subnet for the workers and an NSG without inbound rules.
// A module of its own, deployed before the storage account, so that with
// storageNetworkDefaultAction=Deny main.bicep can allow this subnet (Microsoft.Storage service
// endpoint) in the account's network rules in the same deployment.

param location string
@description('The pool\'s name: the VNet is <name>-vnet, the NSG <name>-nsg.')
param name string
param tags object = {}

var addressPrefix = '10.42.0.0/16'
var subnetPrefix = '10.42.0.0/24'

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

output subnetId string = vnet.properties.subnets[0].id
output nsgId string = nsg.id
