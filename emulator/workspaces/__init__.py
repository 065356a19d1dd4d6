"""Isolated workspaces: every surface again under `/w/{id}/`, each with its own state.

`scope.services(request)` is how every handler reaches its workspace's services; `dispatch`
strips `/w/{id}` and names the workspace in the ASGI scope; `registry` creates, lists,
expires and removes them; `routes` is their control API (`/_emulator/workspaces`).
"""
