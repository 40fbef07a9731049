"""Azure RBAC, enforced where Azure is not: the deployment's role assignments as a model
(``model``, derived from infra/), the REST operations each storage call makes (``operations``),
and a Storage that refuses what Azure would refuse (``guard``), recording what it used
(``usage``). docs/permissions.md is generated from them.
"""
