"""The API server's steps before any controller sees an object: names, decoding and schema,
RBAC, mutation, Pod Security, the admission policies, the namespace's ResourceQuota."""
