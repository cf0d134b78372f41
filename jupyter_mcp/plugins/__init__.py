"""Tools from other packages: the plugin host, PluginContext and the test harness."""
