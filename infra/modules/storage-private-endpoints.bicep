// Optional private endpoints for dagq's storage account: blob, queue and table, each in the given
// subnet and registered in a private DNS zone (privatelink.<service>.core.windows.net) that you
// link to the virtual networks of the Function App (VNet integration) and of the workers. With
// them, set the account's publicNetworkAccess to Disabled (main.bicep: storagePublicNetworkAccess).

param location string
param tags object = {}

@description('Resource id of the storage account.')
param storageAccountId string

@description('Name of the storage account (names the endpoints).')
param storageAccountName string

@description('Subnet the private endpoints get their addresses from.')
param subnetId string

@description('Resource ids of the private DNS zones, by service: {blob: ..., queue: ..., table: ...}.')
param privateDnsZoneIds object

var services = [
  'blob'
  'queue'
  'table'
]

resource endpoints 'Microsoft.Network/privateEndpoints@2023-11-01' = [
  for service in services: {
    name: 'pe-${storageAccountName}-${service}'
    location: location
    tags: tags
    properties: {
      subnet: {
        id: subnetId
      }
      privateLinkServiceConnections: [
        {
          name: '${storageAccountName}-${service}'
          properties: {
            privateLinkServiceId: storageAccountId
            groupIds: [
              service
            ]
          }
        }
      ]
    }
  }
]

resource zoneGroups 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2023-11-01' = [
  for (service, i) in services: {
    parent: endpoints[i]
    name: 'default'
    properties: {
      privateDnsZoneConfigs: [
        {
          name: service
          properties: {
            privateDnsZoneId: privateDnsZoneIds[service]
          }
        }
      ]
    }
  }
]
