"""dagq's HTTP API as plain code: the operations (``service``), their HTTP shell (``http``), the
RFC 7807 errors (``problems``) and the Functions triggers' entry points (``triggers``).

``function_app.py`` only declares the functions and delegates here, so everything the app does can
be tested without the Functions host.
"""
