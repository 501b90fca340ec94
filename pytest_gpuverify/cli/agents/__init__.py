"""The interface for coding agents: ``gpuverify mcp`` (an MCP server whose tools are the product's verbs)
and the shipped skill page (``gpuverify skill``)."""
