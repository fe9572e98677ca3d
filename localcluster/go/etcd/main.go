// Command etcd is upstream etcd's server, built from the Go module proxy for the local cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
