"""What the emulator's tests share: the self-test's cluster helpers (cluster: picoemu commands, SQL
on the private ports, the storage counters), concurrent clients (load), and the cases of routing by
key (key_route)."""
