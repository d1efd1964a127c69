"""The Redis Coordinator: quotas, send slots and breakers shared by every node through one Redis.

Chosen by LYRA_COORDINATION_URL=redis://… (or rediss:// for TLS); each step is one atomic Lua
script that reads Redis's own clock, so nodes whose clocks disagree still agree on every slot.
"""

from lyra_crawl.backends.redis.coordinator import RedisCoordinator

__all__ = ["RedisCoordinator"]
