"""The compiler's passes, one module each, in the order ``shared.definition.compiler.run_passes``
runs them over one ``Compilation`` (``shared.definition.compilation``):

1. ``values``: the workflow's own fields (and the checks of one final task's values);
2. ``expansion``: written tasks -> final tasks (names, ``foreach``, templates, values);
3. ``budgets``: too many tasks or bytes after expansion ends the compilation here;
4. ``dependencies``: ``depends_on`` -> task numbers, ``dep_policy``, conditions;
5. ``foreach_from``: the parent output a dynamic fan-out reads, and its templates;
6. ``acyclic``: no dependency cycle;
7. ``cache``: ``cache:`` versions and ttls;
8. ``notify``: the webhooks of ``notify:`` (their URLs' form, their events);
9. ``build``: every issue found, or the ``CompiledWorkflow``.
"""
