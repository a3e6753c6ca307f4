package fleet_test

import (
	"fmt"

	"github.com/harnessd/harnessd/internal/fleet"
)

func ExampleParseStore() {
	eps, err := fleet.ParseStore("etcd://etcd-a:2379,etcd-b,[::1]:2379")
	fmt.Println(eps, err)
	_, err = fleet.ParseStore("http://etcd-a:2379")
	fmt.Println(err)
	// Output:
	// [http://etcd-a:2379 http://etcd-b:2379 http://[::1]:2379] <nil>
	// INVALID_ARGUMENT: cluster store "http://etcd-a:2379": want etcd://host:port[,host:port...] (or etcds:// for TLS)
}
