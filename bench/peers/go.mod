module github.com/locksmith-go/locksmith/bench/peers

go 1.26.0

replace github.com/locksmith-go/locksmith => ../..

require github.com/locksmith-go/locksmith v0.0.0-00010101000000-000000000000

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2 // indirect
	github.com/bsm/redislock v0.9.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-redsync/redsync/v4 v4.18.1 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
