module github.com/locksmith-go/locksmith

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	github.com/RussellLuo/timingwheel v0.0.0-20220218152713-54845bda3108
	github.com/go-echarts/go-echarts/v2 v2.6.0
	github.com/google/uuid v1.6.0
	github.com/panjf2000/gnet/v2 v2.10.0
	github.com/schollz/progressbar/v3 v3.18.0
	github.com/stretchr/testify v1.11.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.30.0
	golang.org/x/term v0.28.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
