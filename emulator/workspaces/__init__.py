"""Isolated workspaces: every surface again under `/w/{id}/`, each with its own state.

`emulator.workspace_scope.workspace(request)` is how every handler reaches its workspace's
services (a bottom-layer module, so that every layer may use it); `dispatch`
strips `/w/{id}` and names the workspace in the ASGI scope; `registry` creates, lists,
expires and removes them; `routes` is their control API (`/_emulator/workspaces`).
"""
