"""Development tools: the Azurite launcher, the local Functions host and the local stack.

Nothing here is deployed (.funcignore excludes it); production is Azure Functions and Azure Storage.
"""
