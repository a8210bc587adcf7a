"""pytest plugin (entry point ``pytest11``); filled in by the port issue."""
