"""The archive: record each task's children, publish the manifest, the manifest table and a
month's revisions."""
