// Log Analytics workspace + workspace-based Application Insights: the Function App and the
// workers (through APPLICATIONINSIGHTS_CONNECTION_STRING) report here.

param location string
param logAnalyticsName string
param applicationInsightsName string

@description('Days of logs to keep (30 is included in the Log Analytics price).')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

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
  }
}

output applicationInsightsName string = applicationInsights.name
output connectionString string = applicationInsights.properties.ConnectionString
output logAnalyticsWorkspaceId string = logAnalytics.id
