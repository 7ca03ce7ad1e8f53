# The generated JSONL corpus of bench/commit_scale.sh and bench/train_data.sh:
# n records of about 200 bytes (-v n=), about 1% repeating an earlier one,
# into s files shard-000.jsonl, ... (-v s=), or with -v stdout=1 to standard
# output, shard after shard.
BEGIN {
  srand(38); f = "the quick brown fox jumps over the lazy dog while the committed corpus grows past memory"
  for (j = 0; j < s; j++) { out = stdout ? "/dev/stdout" : sprintf("shard-%03d.jsonl", j)
    for (i = int(n * j / s); i < int(n * (j + 1) / s); i++) { k = (rand() < 0.01) ? int(rand() * (i + 1)) : i
      printf "{\"id\": %d, \"text\": \"document %d: %s; %s %d\"}\n", i, k, f, substr(f, 1 + k % 40, 40), k * 7919 % 1000003 > out }
    if (!stdout) close(out) } }
