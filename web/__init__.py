"""The arena page: a server-rendered shell whose script reads the REST API and the stream."""
