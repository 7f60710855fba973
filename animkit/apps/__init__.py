"""The applications: the command line, the shared commands, the batch runner, the notebook and the HTML viewer."""
