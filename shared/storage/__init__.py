"""The storage shell: adapters over Azure Storage (and in-memory fakes of the same interfaces).

``ports`` defines the interfaces; ``azure_*`` modules implement them with the async Azure SDKs;
``memory`` implements them in memory for fast tests. The same contract tests run against both.
"""
