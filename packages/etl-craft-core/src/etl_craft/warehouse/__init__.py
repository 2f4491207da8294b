"""What every warehouse dialect provides (`dialect`) and the connection it opens (`session`).

Kept apart from the SQL handler so that loading a dialect class, which the configuration does for
every command, imports neither the handler nor a warehouse driver.
"""
