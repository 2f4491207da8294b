"""The HTTP API (v1): every operation the CLI has, over HTTP, under bearer tokens and roles.

`app.create_app` builds the FastAPI application; `listener.ApiListener` serves it with uvicorn in a
thread of `etl-craft server`. FastAPI is imported only here, so the `etl-craft` CLI starts without it.
"""
