//! Which Redis commands are lookups, writes or deletes, and where their cache keys sit among the arguments.

/// What a command does to the cached data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Delete,
    /// A real Redis command that reads or changes no cached value (PING, SELECT, EXISTS, ...): counted only.
    Other,
}

/// Where the cache keys of a command are, given its arguments (command name excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `CMD key`: one plain key (GET, HGETALL, INCR, ...).
    Key,
    /// `CMD key arg...`: the first argument is a plain key, the rest are not keys (SET key value [EX s]).
    KeyThenArgs,
    /// `CMD key key ...`: every argument is a plain key (MGET, DEL).
    Keys,
    /// `CMD key value key value ...` (MSET).
    KeyValuePairs,
    /// `CMD key field field ...` (HMGET, HDEL).
    KeyFields,
    /// `CMD key field value field value ...` (HSET, HMSET).
    KeyFieldValuePairs,
    /// `CMD key field arg` (HINCRBY key field n, HSETNX key field value).
    KeyFieldArg,
    /// No argument is a cache key.
    NoKeys,
}

#[derive(Clone, Copy, Debug)]
pub struct CommandInfo {
    pub op: Op,
    pub shape: Shape,
    /// Minimum number of arguments after the command name.
    pub min_args: usize,
    /// Maximum number of arguments after the command name (`usize::MAX`: any).
    pub max_args: usize,
}

const ANY: usize = usize::MAX;

const fn info(op: Op, shape: Shape, min_args: usize, max_args: usize) -> CommandInfo {
    CommandInfo { op, shape, min_args, max_args }
}

impl CommandInfo {
    /// Whether Redis runs the command with `n` arguments after its name. It answers any other count with an
    /// arity error and runs nothing: such a command read from a capture is no lookup and no write (an HTTP
    /// request line sent to port 6379, `GET / HTTP/1.1`, is one).
    pub fn accepts(&self, n: usize) -> bool {
        let pairs = match self.shape {
            Shape::KeyValuePairs => n.is_multiple_of(2),
            Shape::KeyFieldValuePairs => !n.is_multiple_of(2),
            _ => true,
        };
        pairs && (self.min_args..=self.max_args).contains(&n)
    }

    /// How many cache keys (lookups, writes or deletes) a command of this shape with `n` arguments after
    /// its name touches, once `accepts(n)`: what both a row and an event are made per.
    pub fn keys_touched(&self, n: usize) -> usize {
        match self.shape {
            Shape::Key | Shape::KeyThenArgs | Shape::KeyFieldArg => 1,
            Shape::Keys => n,
            Shape::KeyValuePairs => n / 2,
            Shape::KeyFields => n - 1,
            Shape::KeyFieldValuePairs => (n - 1) / 2,
            Shape::NoKeys => 0,
        }
    }
}

/// Looks up an upper-case command name.
pub fn lookup(name: &[u8]) -> Option<CommandInfo> {
    use Op::*;
    use Shape::*;
    // Argument counts as in Redis's command table (`COMMAND INFO`: arity, and the pairs its commands check).
    Some(match name {
        b"HMGET" => info(Read, KeyFields, 2, ANY),
        b"HGET" => info(Read, KeyFields, 2, 2),
        // Without the reply the fields an HGETALL returned are unknown: it is one lookup of the whole entity.
        b"HGETALL" => info(Read, Key, 1, 1),
        b"GET" => info(Read, Key, 1, 1),
        b"MGET" => info(Read, Keys, 1, ANY),

        b"HSET" | b"HMSET" => info(Write, KeyFieldValuePairs, 3, ANY),
        b"HSETNX" | b"HINCRBY" | b"HINCRBYFLOAT" => info(Write, KeyFieldArg, 3, 3),
        b"SET" => info(Write, KeyThenArgs, 2, ANY),
        b"SETNX" | b"GETSET" | b"APPEND" | b"INCRBY" | b"DECRBY" | b"INCRBYFLOAT" => info(Write, KeyThenArgs, 2, 2),
        b"SETRANGE" | b"SETEX" | b"PSETEX" => info(Write, KeyThenArgs, 3, 3),
        b"INCR" | b"DECR" => info(Write, Key, 1, 1),
        b"MSET" | b"MSETNX" => info(Write, KeyValuePairs, 2, ANY),
        // With an optional NX | XX | GT | LT since Redis 7.
        b"EXPIRE" | b"PEXPIRE" | b"EXPIREAT" | b"PEXPIREAT" => info(Write, KeyThenArgs, 2, 3),
        b"PERSIST" => info(Write, Key, 1, 1),

        b"HDEL" => info(Delete, KeyFields, 2, ANY),
        b"DEL" | b"UNLINK" => info(Delete, Keys, 1, ANY),
        b"GETDEL" => info(Delete, Key, 1, 1),

        _ if is_other_command(name) => info(Other, NoKeys, 0, ANY),
        _ => return None,
    })
}

/// Real Redis commands that touch no cached value. A trace line naming none of these nor a command above is
/// an error: it is far more likely a wrong format than a command we should silently ignore.
fn is_other_command(name: &[u8]) -> bool {
    const OTHER: &[&[u8]] = &[
        b"AUTH", b"HELLO", b"PING", b"ECHO", b"SELECT", b"QUIT", b"RESET", b"CLIENT", b"COMMAND", b"INFO",
        b"CONFIG", b"DBSIZE", b"TIME", b"LASTSAVE", b"SAVE", b"BGSAVE", b"BGREWRITEAOF", b"SLOWLOG", b"LATENCY",
        b"MEMORY", b"DEBUG", b"MONITOR", b"ROLE", b"REPLICAOF", b"SLAVEOF", b"CLUSTER", b"READONLY",
        b"READWRITE", b"ASKING", b"WAIT", b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH", b"EVAL",
        b"EVALSHA", b"EVAL_RO", b"EVALSHA_RO", b"SCRIPT", b"FUNCTION", b"FCALL", b"FCALL_RO", b"SUBSCRIBE",
        b"UNSUBSCRIBE", b"PSUBSCRIBE", b"PUNSUBSCRIBE", b"PUBLISH", b"PUBSUB", b"SSUBSCRIBE", b"SUNSUBSCRIBE",
        b"SPUBLISH", b"EXISTS", b"TYPE", b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME", b"TOUCH", b"OBJECT",
        b"DUMP", b"RESTORE", b"RENAME", b"RENAMENX", b"MOVE", b"COPY", b"KEYS", b"SCAN", b"RANDOMKEY",
        b"FLUSHDB", b"FLUSHALL", b"SWAPDB", b"STRLEN", b"GETRANGE", b"GETEX", b"SUBSTR", b"HEXISTS", b"HLEN",
        b"HKEYS", b"HVALS", b"HSTRLEN", b"HSCAN", b"HRANDFIELD", b"LPUSH", b"RPUSH", b"LPOP", b"RPOP",
        b"LRANGE", b"LLEN", b"LINDEX", b"LSET", b"LREM", b"LTRIM", b"LINSERT", b"BLPOP", b"BRPOP", b"LMOVE",
        b"SADD", b"SREM", b"SMEMBERS", b"SISMEMBER", b"SMISMEMBER", b"SCARD", b"SSCAN", b"SPOP",
        b"SRANDMEMBER", b"SUNION", b"SINTER", b"SDIFF", b"ZADD", b"ZREM", b"ZRANGE", b"ZRANGEBYSCORE",
        b"ZREVRANGE", b"ZREVRANGEBYSCORE", b"ZSCORE", b"ZMSCORE", b"ZCARD", b"ZCOUNT", b"ZINCRBY", b"ZRANK",
        b"ZREVRANK", b"ZSCAN", b"ZPOPMIN", b"ZPOPMAX", b"ZREMRANGEBYSCORE", b"ZREMRANGEBYRANK", b"XADD",
        b"XREAD", b"XRANGE", b"XLEN", b"XACK", b"XREADGROUP", b"XGROUP", b"XTRIM", b"XDEL", b"PFADD",
        b"PFCOUNT", b"PFMERGE", b"SETBIT", b"GETBIT", b"BITCOUNT", b"BITOP", b"BITFIELD", b"GEOADD",
        b"GEOSEARCH", b"GEODIST", b"GEOPOS", b"SORT", b"SHUTDOWN", b"ACL", b"MODULE",
        // A Redis Cluster's own: resharding moves keys with MIGRATE, which sends RESTORE-ASKING (and RESTORE)
        // to the node the slot goes to; CLUSTER, READONLY, READWRITE and ASKING are above.
        b"MIGRATE", b"RESTORE-ASKING",
    ];
    OTHER.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_feature_store_commands() {
        assert_eq!(lookup(b"HMGET").unwrap().op, Op::Read);
        assert_eq!(lookup(b"HSET").unwrap().op, Op::Write);
        assert_eq!(lookup(b"UNLINK").unwrap().op, Op::Delete);
        assert_eq!(lookup(b"PING").unwrap().op, Op::Other);
        assert!(lookup(b"HMGETT").is_none());
        assert!(lookup(b"42932745").is_none());
    }

    /// Resharding traffic used to count as unknown commands.
    #[test]
    fn a_clusters_own_commands_are_known() {
        for name in [&b"MIGRATE"[..], b"RESTORE-ASKING", b"CLUSTER", b"READONLY", b"READWRITE", b"ASKING"] {
            assert_eq!(lookup(name).map(|i| i.op), Some(Op::Other), "{}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn argument_counts_redis_rejects() {
        let accepts = |name: &[u8], n: usize| lookup(name).unwrap().accepts(n);
        assert!(accepts(b"GET", 1) && !accepts(b"GET", 2) && !accepts(b"GET", 0));
        assert!(accepts(b"HGET", 2) && !accepts(b"HGET", 3));
        assert!(accepts(b"HMGET", 2) && accepts(b"HMGET", 500) && !accepts(b"HMGET", 1));
        assert!(accepts(b"HSET", 3) && accepts(b"HSET", 5) && !accepts(b"HSET", 4));
        assert!(accepts(b"MSET", 4) && !accepts(b"MSET", 3));
        assert!(accepts(b"SET", 5) && accepts(b"EXPIRE", 3) && !accepts(b"EXPIRE", 4));
        assert!(accepts(b"PING", 0) && accepts(b"PING", 1));
    }
}
