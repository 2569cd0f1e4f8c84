"""Built-in hook plugins (activated only by name, never by installation)."""
