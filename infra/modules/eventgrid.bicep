// Notifications to Azure Event Grid (issue 29, docs/notifications.md): a custom topic that
// receives every workflow's end (dagq.workflow.completed / failed / cancelled) and each task's
// final failure (dagq.task.failed) as CloudEvents 1.0, for users who route them to Logic Apps,
// Functions or Service Bus with event subscriptions of their own. Created only with main.bicep's
// eventGridTopic=true; the app publishes with its managed identity (EventGrid Data Sender on this
// topic alone), never with an access key (local auth is off).

param location string
param tags object = {}

@description('Name of the custom topic.')
param topicName string

@description('Principal id of the app\'s identity: it gets EventGrid Data Sender on the topic.')
param appPrincipalId string

var eventGridDataSender = 'd5a91429-5739-47e2-a06b-3470a27159e7'

resource topic 'Microsoft.EventGrid/topics@2025-02-15' = {
  name: topicName
  location: location
  tags: tags
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    inputSchema: 'CloudEventSchemaV1_0'
    disableLocalAuth: true
    minimumTlsVersionAllowed: '1.2'
    // checkov:skip=CKV_AZURE_193: the Function App (Flex Consumption, no VNet by default) publishes over the public endpoint, authenticated by Entra ID only (disableLocalAuth)
    publicNetworkAccess: 'Enabled'
  }
}

resource appSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(topic.id, appPrincipalId, eventGridDataSender)
  scope: topic
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', eventGridDataSender)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

output endpoint string = topic.properties.endpoint
output topicId string = topic.id
