module github.com/locksmith-go/locksmith/bench

go 1.26.0

replace github.com/locksmith-go/locksmith => ../

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	github.com/bsm/redislock v0.9.4
	github.com/go-echarts/go-echarts/v2 v2.6.0
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/locksmith-go/locksmith v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/schollz/progressbar/v3 v3.18.0
	go.uber.org/goleak v1.3.0
	golang.org/x/term v0.28.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/panjf2000/gnet/v2 v2.10.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
