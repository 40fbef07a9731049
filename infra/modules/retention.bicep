// Retention: a blob lifecycle management policy that deletes old task outputs and dead letters.
//
// This is the storage account's backstop for blobs nothing else deletes: outputs, logs, upstream
// bundles and claims under '{prefix}-outputs/', dead-lettered events under '{prefix}-deadletter/',
// and result cache entries under '{prefix}-cache/' (past the longest ttl). It never touches definitions, states or the index table: those go with
// `dagq purge` / DELETE /api/workflows/{id}, which removes a whole workflow consistently
// (docs/operations.md, "Retention end to end"). Keep outputsRetentionDays at least as long as the
// age you purge at, or old workflows stay listed with their logs and outputs already gone.
//
// An account has one management policy ('default'): this module owns it.

@description('Name of the existing storage account.')
param storageAccountName string

@description('The deployment prefix (shared/names.py): the policy matches its containers only.')
param prefix string = 'dagq'

@description('Days after their last write that task outputs, logs, upstream bundles and claims are deleted.')
@minValue(1)
@maxValue(36500)
param outputsRetentionDays int = 90

@description('Days after their last write that result cache entries are deleted (a backstop: entries expire by their ttl, at most 365 days, and purge removes expired ones).')
@minValue(1)
@maxValue(36500)
param cacheRetentionDays int = 366

@description('Days after they were written that dead-lettered events are deleted.')
@minValue(1)
@maxValue(36500)
param deadletterRetentionDays int = 30

// Mirrors shared/names.py ResourceNames.outputs_container / deadletter_container / cache_container.
var outputsContainer = '${prefix}-outputs'
var deadletterContainer = '${prefix}-deadletter'
var cacheContainer = '${prefix}-cache'

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource policy 'Microsoft.Storage/storageAccounts/managementPolicies@2023-05-01' = {
  parent: account
  name: 'default'
  properties: {
    policy: {
      rules: [
        {
          name: 'dagq-outputs'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
              ]
              prefixMatch: [
                '${outputsContainer}/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: outputsRetentionDays
                }
              }
            }
          }
        }
        {
          name: 'dagq-deadletters'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
              ]
              prefixMatch: [
                '${deadletterContainer}/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: deadletterRetentionDays
                }
              }
            }
          }
        }
        {
          name: 'dagq-cache'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
              ]
              prefixMatch: [
                '${cacheContainer}/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: cacheRetentionDays
                }
              }
            }
          }
        }
      ]
    }
  }
}

output outputsRetentionDays int = outputsRetentionDays
output deadletterRetentionDays int = deadletterRetentionDays
