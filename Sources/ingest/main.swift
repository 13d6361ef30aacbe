import Ingest
print(StageRegistry.names)
