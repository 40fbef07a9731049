// Alerts: someone is told when dagq needs a person. Each alert is a log query over the Log
// Analytics workspace that receives the storage logs (writes and deletes, storage.bicep) and the
// app's and workers' telemetry (workspace-based Application Insights: AppRequests, AppTraces).
// infra/README.md, "Alerts", says what each one means and what to do.

param location string
param tags object = {}

@description('Log Analytics workspace the queries run on.')
param logAnalyticsWorkspaceId string

param prefix string

@description('Email address that receives the alerts (an action group is created for it); empty: none.')
param alertEmail string = ''

@description('Resource id of an existing action group (Teams, PagerDuty, SMS...) that receives the alerts; empty: none.')
param actionGroupId string = ''

@description('Minutes a task may wait in its queue with no worker taking any task from it before "work waiting" fires (GPU VMs take ~10-15 min to boot and load the driver).')
@minValue(15)
param workWaitingMinutes int = 30

// The worker registry: a table of its own, one row per running agent in partition 'worker'
// (shared/names.py registry_table, WORKER_PARTITION).
var registryTable = '${prefix}WorkersRegistry'
var workerPartition = 'worker'

resource emailGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: 'ag-${prefix}-alerts'
  location: 'Global'
  tags: tags
  properties: {
    groupShortName: 'dagq'
    enabled: true
    emailReceivers: [
      {
        name: 'operator'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

var actionGroups = concat(empty(alertEmail) ? [] : [emailGroup.id], empty(actionGroupId) ? [] : [actionGroupId])

// Each rule fires when its query returns at least one row in its window.
var rules = [
  {
    name: 'function-failures'
    severity: 1
    window: 'PT15M'
    title: 'dagq: function invocations failed'
    description: 'A coordinator, sweep or API invocation failed (an exception or a 5xx), not a 4xx for bad input.'
    query: 'AppRequests | where Success == false and (isempty(ResultCode) or toint(ResultCode) >= 500 or toint(ResultCode) == 0) | summarize failures = count() by OperationName'
  }
  {
    name: 'dead-letters'
    severity: 2
    window: 'PT1H'
    title: 'dagq: events were dead-lettered'
    description: 'Events that could not be applied were written to ${prefix}-deadletter (dagq doctor; docs/operations.md).'
    query: 'StorageBlobLogs | where OperationName in ("PutBlob", "PutBlockList") and Uri has "/${prefix}-deadletter/" | summarize written = count()'
  }
  {
    name: 'poison-queues'
    severity: 2
    window: 'PT1H'
    title: 'dagq: messages reached a poison queue'
    description: 'The Functions host gave up on an event after maxDequeueCount tries; the poison-repair sweep re-applies it, and this says it happened.'
    query: 'StorageQueueLogs | where OperationName == "PutMessage" and Uri has "-poison/messages" | summarize moved = count()'
  }
  {
    name: 'work-waiting'
    severity: 2
    window: 'PT${workWaitingMinutes}M'
    title: 'dagq: tasks wait and no worker takes them'
    description: 'Tasks were queued but no worker received, heartbeated or finished any task of that queue: the pool is at zero and cannot scale out (quota, Spot capacity), or its agents fail to start.'
    query: 'StorageQueueLogs | where Uri has "/${prefix}-q-" | extend queue = extract(@"/(${prefix}-q-[a-z0-9-]+)/messages", 1, Uri) | summarize sent = countif(OperationName == "PutMessage"), taken = countif(OperationName in ("UpdateMessage", "DeleteMessage")) by queue | where sent > 0 and taken == 0'
  }
  {
    name: 'workers-lost'
    severity: 2
    window: 'PT2H'
    title: 'dagq: a worker stopped heartbeating'
    description: 'A worker agent stopped refreshing its registry row without removing it (a clean stop removes it): the VM or pod died or lost its network.'
    query: 'StorageTableLogs | where Uri has "/${registryTable}(" and Uri matches regex "PartitionKey=(%27|\')${workerPartition}(%27|\')" | extend worker = extract("RowKey=(?:%27|\')([^\'%]+)", 1, Uri) | summarize last = max(TimeGenerated), removed = countif(OperationName == "DeleteEntity") by worker | where removed == 0 and last < ago(10m)'
  }
  {
    name: 'workers-crash-looping'
    severity: 1
    window: 'PT30M'
    title: 'dagq: a worker agent keeps restarting'
    description: 'An agent started 3 times or more in 30 minutes (systemd restarts it on failure): a configuration error, a missing GPU driver, or a storage role.'
    query: 'AppTraces | where Message startswith "worker started" | summarize starts = count() by AppRoleInstance | where starts >= 3'
  }
  {
    name: 'tolerated-storage-failures'
    severity: 2
    window: 'PT1H'
    title: 'dagq: storage calls fail and dagq runs on without them'
    description: 'A cache look-up or record, an index projection, a registry heartbeat or a live-log append failed (a 403: a role missing in infra/modules/identity.bicep). Runs stay correct; dagq doctor names what failed and the fix.'
    query: 'AppTraces | where Message startswith "tolerated storage failure" | summarize failures = count() by AppRoleName, AppRoleInstance'
  }
]

resource alerts 'Microsoft.Insights/scheduledQueryRules@2022-06-15' = [
  for rule in rules: {
    name: '${prefix}-${rule.name}'
    location: location
    tags: tags
    properties: {
      displayName: rule.title
      description: rule.description
      severity: rule.severity
      enabled: true
      scopes: [
        logAnalyticsWorkspaceId
      ]
      evaluationFrequency: 'PT5M'
      windowSize: rule.window
      criteria: {
        allOf: [
          {
            query: rule.query
            timeAggregation: 'Count'
            operator: 'GreaterThan'
            threshold: 0
            failingPeriods: {
              numberOfEvaluationPeriods: 1
              minFailingPeriodsToAlert: 1
            }
          }
        ]
      }
      autoMitigate: true
      // A new workspace has no rows in these tables yet, and ARM's validation of the query then
      // fails the deployment (and `azd up`): skip it. The queries' names are tested offline.
      skipQueryValidation: true
      actions: {
        actionGroups: actionGroups
      }
    }
  }
]

output alertNames array = [for rule in rules: '${prefix}-${rule.name}']
