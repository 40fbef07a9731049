// Log Analytics workspace + workspace-based Application Insights: the Function App and the
// workers (through APPLICATIONINSIGHTS_CONNECTION_STRING, authenticated with Entra ID) report here.

param location string
param logAnalyticsName string
param applicationInsightsName string

@description('Days of logs to keep (30 is included in the Log Analytics price).')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

@description('Most GB of logs the workspace ingests a day (a cap, then ingestion stops until the next day: a runaway log cannot run up the bill); -1: no cap.')
param dailyQuotaGb int = 1

param tags object = {}

resource logAnalytics 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    workspaceCapping: {
      dailyQuotaGb: dailyQuotaGb
    }
    features: {
      enableLogAccessUsingOnlyResourcePermissions: true
    }
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logAnalytics.id
    IngestionMode: 'LogAnalytics'
    RetentionInDays: retentionInDays
    // Telemetry is accepted only with an Entra ID token (APPLICATIONINSIGHTS_AUTHENTICATION_STRING
    // and the Monitoring Metrics Publisher role, identity.bicep): the connection string alone,
    // which is not a secret, cannot be used to send forged telemetry.
    DisableLocalAuth: true
  }
}

output applicationInsightsName string = applicationInsights.name
// No connection string output: modules that need it read it from the component themselves, so it
// does not appear in deployment outputs or in the azd environment.
output logAnalyticsWorkspaceId string = logAnalytics.id
