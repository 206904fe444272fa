package resttls_test

import (
	"bytes"
	"encoding/asn1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/resttls"
	"github.com/flink-operator/flink-operator/test/pki"
)

// Budget of decoding one store of at most a few KiB, crafted or not (CPU time).
const (
	allocBudget = 32 << 20
	timeBudget  = 500 * time.Millisecond
)

// jks assembles a JKS store: magic, version and entry count, then body, then a 20-byte
// digest (wrong, as a forger without the password writes it).
func jks(version, count uint32, body ...any) []byte {
	var b bytes.Buffer
	for _, v := range append([]any{uint32(0xfeedfeed), version, count}, body...) {
		switch v := v.(type) {
		case string: // Java's writeUTF
			_ = binary.Write(&b, binary.BigEndian, uint16(len(v)))
			b.WriteString(v)
		case []byte:
			b.Write(v)
		default:
			_ = binary.Write(&b, binary.BigEndian, v)
		}
	}
	b.Write(make([]byte, 20))
	return b.Bytes()
}

// withMACIterations is a PKCS12 store with its MAC's iteration count replaced.
func withMACIterations(t testing.TB, p12 []byte, iterations int) []byte {
	t.Helper()
	var pfx struct {
		Version  int
		AuthSafe asn1.RawValue
		MacData  struct {
			Mac        asn1.RawValue
			MacSalt    []byte
			Iterations int
		}
	}
	rest, err := asn1.Unmarshal(p12, &pfx)
	require.NoError(t, err)
	require.Empty(t, rest)
	pfx.MacData.Iterations = iterations
	out, err := asn1.Marshal(pfx)
	require.NoError(t, err)
	return out
}

const (
	trustedTag = uint32(2)
	keyTag     = uint32(1)
	timestamp  = uint64(0)
)

// craftedStores are stores whose declared lengths and counts are far beyond their size, each
// with what its refusal names.
func craftedStores(t testing.TB) map[string]struct {
	data    []byte
	wantErr string
} {
	p12 := pki.NewCA(t, "FlinkCA").TruststorePKCS12(t, password)
	trust, keys := pbmac1Stores(t)
	return map[string]struct {
		data    []byte
		wantErr string
	}{
		// keystore-go makes a 2^32-1 certificate chain (171 GB) before it checks anything.
		"chain of 2^32-1 certificates": {jks(2, 1, keyTag, "a", timestamp, uint32(0), uint32(0xffffffff)),
			"chain of 4294967295 certificates"},
		"key of 4 GiB": {jks(2, 1, keyTag, "a", timestamp, uint32(0xffffffff)), "entry 0 key of 4294967295 bytes"},
		"certificate of 4 GiB": {jks(2, 1, trustedTag, "a", timestamp, "X.509", uint32(0xffffffff)),
			"entry 0 certificate of 4294967295 bytes"},
		"version 1 certificate of 4 GiB": {jks(1, 1, trustedTag, "a", timestamp, uint32(0xfffffff0)),
			"entry 0 certificate of 4294967280 bytes"},
		"alias beyond the end":     {jks(2, 1, trustedTag, []byte{0xff, 0xff}), "entry 0 alias of 65535 bytes"},
		"type beyond the end":      {jks(2, 1, trustedTag, "a", timestamp, []byte{0xff, 0xff}), "entry 0 certificate type of 65535 bytes"},
		"2^32-1 entries":           {jks(2, 0xffffffff), "4294967295 entries: at most 1000"},
		"unknown entry tag":        {jks(2, 1, uint32(7), "a", timestamp), "tag 7"},
		"unknown version":          {jks(3, 0), "version 3"},
		"no digest":                {jks(2, 0)[:12], "digest is missing"},
		"PKCS12 MAC of 2e7 rounds": {withMACIterations(t, p12, 20_000_000), "20000000 key-derivation iterations: at most 1000000"},
		// The MAC is right (the tenant knows its store's password): the decoder then derives
		// the decryption keys with whatever count the inner layers name.
		"PKCS12 encrypted contents of 2^31-1 rounds": {withInnerIterations(t, trust, password, true, false, 1<<31-1),
			"encrypted contents 0 ask for 2147483647 key-derivation iterations: at most 1000000"},
		"PKCS12 shrouded key of 2^31-1 rounds": {withInnerIterations(t, keys, password, false, true, 1<<31-1),
			"key bag 0 asks for 2147483647 key-derivation iterations: at most 1000000"},
		"PKCS12 of 1.6e6 rounds in all": {withInnerIterations(t, keys, password, true, true, 800_000),
			"1601000 key-derivation iterations in all: at most 1000000"},
		"PEM store of 2 MiB":        {append([]byte("-----BEGIN CERTIFICATE-----\n"), bytes.Repeat([]byte("A"), 2<<20)...), "at most 1048576"},
		"PKCS12-looking 2 MiB blob": {append([]byte{0x30}, make([]byte, 2<<20)...), "at most 1048576"},
	}
}

const childEnv = "RESTTLS_DECODE_STORE"

// decodeMeasured decodes one store and reports its allocations, the CPU time the process
// spent (not the wall time, which a loaded machine stretches) and the decode's error.
func decodeMeasured(data []byte, password string) (alloc uint64, took time.Duration, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := cpuTime()
	_, err = resttls.TrustedCertificates(data, password)
	took = cpuTime() - start
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took, err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCraftedStoresAreRefusedWithinBudget decodes each crafted store in a child process, as
// a store that makes the Go runtime run out of memory kills the process without a panic to
// recover: the child must survive, refuse the store naming what is wrong, and stay within
// the budget.
func TestCraftedStoresAreRefusedWithinBudget(t *testing.T) {
	if in := os.Getenv(childEnv); in != "" {
		data, err := os.ReadFile(in)
		require.NoError(t, err)
		alloc, took, err := decodeMeasured(data, password)
		fmt.Printf("\nRESULT alloc=%d took=%d err=%v\n", alloc, took.Nanoseconds(), err)
		return
	}
	for name, tt := range craftedStores(t) {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCraftedStoresAreRefusedWithinBudget$", "-test.count=1", "-test.timeout=60s")
			store := pki.Write(t, filepath.Join(t.TempDir(), "store"), tt.data)
			cmd.Env = append(os.Environ(), childEnv+"="+store)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the decoding process died:\n%s", tail(out))
			var alloc, took uint64
			var msg string
			for _, line := range strings.Split(string(out), "\n") {
				if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
					_, _ = fmt.Sscanf(rest, "alloc=%d took=%d", &alloc, &took)
					_, msg, _ = strings.Cut(rest, " err=")
				}
			}
			require.NotEmpty(t, msg, "no result:\n%s", tail(out))
			assert.Contains(t, msg, tt.wantErr)
			assert.Less(t, alloc, uint64(allocBudget), "bytes allocated")
			assert.Less(t, time.Duration(took), timeBudget)
		})
	}
}

func tail(out []byte) string {
	if len(out) > 2000 {
		out = out[:2000]
	}
	return string(out)
}

// TestValidStoresStillDecode: the checks refuse nothing Java or OpenSSL writes.
func TestValidStoresStillDecode(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	leaf := ca.Issue(t, "op")
	for name, data := range validStores(t) {
		t.Run(name, func(t *testing.T) {
			certs, err := resttls.TrustedCertificates(data, password)
			require.NoError(t, err)
			assert.NotEmpty(t, certs)
		})
	}
	for name, data := range map[string][]byte{"JKS": leaf.KeystoreJKS(t, password), "PKCS12": leaf.KeystorePKCS12(t, password)} {
		t.Run("key pair "+name, func(t *testing.T) {
			cert, err := resttls.KeyPair(data, password)
			require.NoError(t, err)
			assert.Equal(t, "op", cert.Leaf.Subject.CommonName)
		})
	}
}

func validStores(t testing.TB) map[string][]byte {
	ca := pki.NewCA(t, "FlinkCA")
	leaf := ca.Issue(t, "jm")
	return map[string][]byte{
		"JKS truststore":    ca.TruststoreJKS(t, password),
		"JKS keystore":      leaf.KeystoreJKS(t, password),
		"PKCS12 truststore": ca.TruststorePKCS12(t, password),
		"PKCS12 keystore":   leaf.KeystorePKCS12(t, password),
		"PEM bundle":        append(pki.CertPEM(ca.Cert), pki.CertPEM(leaf.Cert)...),
	}
}

// FuzzTrustedCertificates: whatever a store holds, it is decoded or refused, never a panic,
// within the time and memory budget.
func FuzzTrustedCertificates(f *testing.F) {
	for _, data := range validStores(f) {
		f.Add(data, password)
	}
	for _, tt := range craftedStores(f) {
		if len(tt.data) < 64<<10 {
			f.Add(tt.data, password)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, password string) {
		// A decode that never ends would stall the fuzzer without a report: crash instead,
		// which records the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic("decoding took more than 10 s") })
		defer watchdog.Stop()
		alloc, took, _ := decodeMeasured(data, password)
		_, _ = resttls.KeyPair(data, password)
		if alloc > allocBudget || took > timeBudget {
			t.Fatalf("%d bytes: allocated %d bytes in %v", len(data), alloc, took)
		}
	})
}

// TestRealToolStoresStillDecode: stores keytool (Java 17, and its Java 8 legacy format with
// 100000 MAC and 50000 PBE iterations) and OpenSSL 3 (default and -legacy) wrote, password
// "changeit", are within the budget (testdata/stores). OpenSSL 3.0 cannot mark certificates
// trusted for Java, so its stores here are keystores, trusted through their chains.
func TestRealToolStoresStillDecode(t *testing.T) {
	files, err := filepath.Glob("testdata/stores/*.p12")
	require.NoError(t, err)
	require.Len(t, files, 6)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file) //nolint:gosec // test data
			require.NoError(t, err)
			certs, err := resttls.TrustedCertificates(data, "changeit")
			require.NoError(t, err)
			assert.Equal(t, "jm", certs[0].Subject.CommonName)
			if strings.Contains(file, "keystore") {
				cert, err := resttls.KeyPair(data, "changeit")
				require.NoError(t, err)
				assert.Equal(t, "jm", cert.Leaf.Subject.CommonName)
			}
		})
	}
}
