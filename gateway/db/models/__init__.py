"""The gateway's own tables. Importing this package registers them all on Base.metadata."""
from gateway.db.models.alert_mark import AlertMark
from gateway.db.models.api_key import ApiKey
from gateway.db.models.batch import Batch, BatchLine
from gateway.db.models.batch_file import BatchFile
from gateway.db.models.guardrail import TenantGuardrails
from gateway.db.models.price import Price
from gateway.db.models.prompt import Prompt, PromptVersionRow
from gateway.db.models.prompt_label import PromptLabel, PromptLabelMove
from gateway.db.models.prompt_prefix import PromptPrefix
from gateway.db.models.replica_minute import ReplicaMinute
from gateway.db.models.reservation import Reservation
from gateway.db.models.response import StoredResponse
from gateway.db.models.route_rules import RouteRules
from gateway.db.models.semantic_cache_entry import SemanticCacheEntryRow
from gateway.db.models.tenant import Tenant
from gateway.db.models.upstream_override import UpstreamOverride
from gateway.db.models.usage import Usage
from gateway.db.models.version_cost import VersionCost
from gateway.db.models.webhook import Webhook
from gateway.db.models.webhook_delivery import WebhookDelivery

__all__ = ["AlertMark", "ApiKey", "Batch", "BatchFile", "BatchLine", "Price", "Prompt", "PromptLabel",
           "PromptLabelMove", "PromptPrefix", "PromptVersionRow", "ReplicaMinute", "Reservation",
           "RouteRules", "SemanticCacheEntryRow", "StoredResponse", "Tenant",
           "TenantGuardrails", "UpstreamOverride", "Usage", "VersionCost", "Webhook", "WebhookDelivery"]
