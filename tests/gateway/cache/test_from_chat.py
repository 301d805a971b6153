from gateway.cache import CacheConfig, TenantCachePolicy
from gateway.cache.from_chat import cache_request, tenant_policy
from gateway.cache.keys import namespace_key
from gateway.schemas.openai import ChatCompletionRequest
from gateway.security.principal import Principal


def body(**kw) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"model": "chat", "messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "What is the capital of France?"}], **kw})


def test_cache_request_from_a_chat_body():
    request = cache_request("t1", body(temperature=0, max_completion_tokens=20, stream=True, seed=3))
    assert (request.tenant_id, request.model, request.temperature, request.max_tokens, request.seed,
            request.stream) == ("t1", "chat", 0, 20, 3, True)
    assert request.messages[-1] == {"role": "user", "content": "What is the capital of France?"}


def test_unset_temperature_is_openais_default_and_therefore_sampled():
    assert cache_request("t1", body()).temperature == 1.0


def test_answer_changing_fields_split_the_namespace():
    plain = namespace_key(cache_request("t1", body(temperature=0)))
    assert namespace_key(cache_request("t1", body(temperature=0, response_format={"type": "text"}))) != plain
    assert namespace_key(cache_request("t1", body(temperature=0, user="someone"))) == plain


def test_tenant_policy_from_a_principal():
    principal = Principal("t1", "acme", "k1", None, None, None, None, None, None,
                          cache_enabled=True, cache_allow_sampling=True, cache_threshold=None,
                          cache_ttl_s=60, cache_max_entries=None)
    config = CacheConfig(default_policy=TenantCachePolicy(threshold=0.9, max_entries=5))
    assert tenant_policy(config, principal) == TenantCachePolicy(True, True, 0.9, 60, 5)
