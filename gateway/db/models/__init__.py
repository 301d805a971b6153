"""The gateway's own tables. Importing this package registers them all on Base.metadata."""
from gateway.db.models.api_key import ApiKey
from gateway.db.models.batch import Batch, BatchLine
from gateway.db.models.batch_file import BatchFile
from gateway.db.models.guardrail import TenantGuardrails
from gateway.db.models.price import Price
from gateway.db.models.replica_minute import ReplicaMinute
from gateway.db.models.response import StoredResponse
from gateway.db.models.tenant import Tenant
from gateway.db.models.usage import Usage
from gateway.db.models.version_cost import VersionCost

__all__ = ["ApiKey", "Batch", "BatchFile", "BatchLine", "Price", "ReplicaMinute", "StoredResponse", "Tenant", "TenantGuardrails",
           "Usage", "VersionCost"]
