#!/bin/sh
# Expose the dagq API's delegated scope and pre-authorize the Azure CLI for it, so that users who
# signed in with `az login` get a token for the API (DAGQ_API_SCOPE=api://<client id>/user_impersonation)
# without a consent prompt; without this Entra answers AADSTS65001 ("the user or administrator has
# not consented"). Run once per app registration, after `az ad app create` (infra/README.md, "Entra
# ID in front of the API"); running it again keeps the scope's id.
#
#   sh infra/entra/expose-api.sh <application (client) id>
#
# Needs: az (signed in as an owner of the app registration, or an admin), python3 (for a uuid).
set -eu

client_id="${1:?usage: expose-api.sh <application (client) id>}"
azure_cli=04b07795-8ddb-461a-bbee-02f9e1bf7b46   # Azure CLI's well-known client id

object_id="$(az ad app show --id "$client_id" --query id -o tsv)"
scope_id="$(az ad app show --id "$client_id" \
  --query "api.oauth2PermissionScopes[?value=='user_impersonation'].id | [0]" -o tsv)"
if [ -z "$scope_id" ]; then
  scope_id="$(python3 -c 'import uuid; print(uuid.uuid4())')"
fi
uri="https://graph.microsoft.com/v1.0/applications/$object_id"

scope='{"id": "'"$scope_id"'", "value": "user_impersonation", "type": "User", "isEnabled": true,
 "adminConsentDisplayName": "Use dagq", "adminConsentDescription": "Submit, watch and manage dagq workflows as the signed-in user.",
 "userConsentDisplayName": "Use dagq", "userConsentDescription": "Submit, watch and manage dagq workflows as you."}'

# The scope first: a pre-authorization may only name a scope that exists. (Graph replaces the
# whole "api" object on PATCH, so the second request repeats the scope.)
az rest --method PATCH --uri "$uri" --headers "Content-Type=application/json" \
  --body '{"api": {"requestedAccessTokenVersion": 2, "oauth2PermissionScopes": ['"$scope"']}}'
az rest --method PATCH --uri "$uri" --headers "Content-Type=application/json" \
  --body '{"api": {"requestedAccessTokenVersion": 2, "oauth2PermissionScopes": ['"$scope"'],
 "preAuthorizedApplications": [{"appId": "'"$azure_cli"'", "delegatedPermissionIds": ["'"$scope_id"'"]}]}}'

echo "api://$client_id/user_impersonation is exposed; Azure CLI ($azure_cli) is pre-authorized for it."
