-- Give back the storage an API key's job or glossary reserved (a purge, a delete).
-- KEYS: the key's storage set and hash (keys.api_key_storage)   ARGV: member -> 1
storage_release(KEYS[1], KEYS[2], ARGV[1])
return 1
