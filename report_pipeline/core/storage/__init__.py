"""Storage adapters behind one `Store` protocol: the private local folder and S3 (errors
classified as transient or permanent here), and bounded request concurrency."""
