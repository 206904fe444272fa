package resttls

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Bounds of a JKS store walked before it is decoded. keystore-go allocates every length
// and count it reads from the file before it checks the password, so a few crafted bytes
// declaring a 4 GiB certificate or 2^32 chain entries kill the process with an
// unrecoverable out-of-memory error. Trust material holds a few entries of a few KiB.
const (
	maxJKSEntries = 1000 // entries of the store, and certificates of all its chains together
	jksDigestLen  = 20   // SHA-1 of password, whitener and content, after the entries
)

// jksWalker reads a JKS store's fields with every length checked against what is left.
type jksWalker struct {
	data []byte
	off  int
}

func (w *jksWalker) remaining() int { return len(w.data) - w.off }

func (w *jksWalker) uint32(what string) (uint32, error) {
	if w.remaining() < 4 {
		return 0, fmt.Errorf("truncated at %s (offset %d)", what, w.off)
	}
	v := binary.BigEndian.Uint32(w.data[w.off:])
	w.off += 4
	return v, nil
}

// skip passes n bytes of what, refusing a length beyond the end of the store.
func (w *jksWalker) skip(n uint32, what string) error {
	length := int64(n)
	if length > int64(w.remaining()) {
		return fmt.Errorf("%s of %d bytes at offset %d, but only %d bytes are left", what, n, w.off, w.remaining())
	}
	w.off += int(length)
	return nil
}

// string passes a Java modified-UTF-8 string: a 16-bit length and its bytes.
func (w *jksWalker) string(what string) error {
	if w.remaining() < 2 {
		return fmt.Errorf("truncated at the length of %s (offset %d)", what, w.off)
	}
	n := binary.BigEndian.Uint16(w.data[w.off:])
	w.off += 2
	return w.skip(uint32(n), what)
}

func (w *jksWalker) certificate(version uint32, what string) error {
	if version == 2 {
		if err := w.string(what + " type"); err != nil {
			return err
		}
	}
	n, err := w.uint32(what + " length")
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s at offset %d is empty", what, w.off)
	}
	return w.skip(n, what)
}

// entry walks one store entry (named entry in errors) of a store of the given version, and
// returns certs plus the certificates it holds, refusing a store that would hold more than
// maxJKSEntries certificates.
func (w *jksWalker) entry(entry string, version uint32, certs uint64) (uint64, error) {
	tag, err := w.uint32(entry + " tag")
	if err != nil {
		return 0, err
	}
	if err := w.string(entry + " alias"); err != nil {
		return 0, err
	}
	if err := w.skip(8, entry+" creation time"); err != nil {
		return 0, err
	}
	switch tag {
	case 1: // private key entry: encrypted key, then its certificate chain
		n, err := w.uint32(entry + " key length")
		if err != nil {
			return 0, err
		}
		if err := w.skip(n, entry+" key"); err != nil {
			return 0, err
		}
		chain, err := w.uint32(entry + " chain length")
		if err != nil {
			return 0, err
		}
		if certs+uint64(chain) > maxJKSEntries {
			return 0, fmt.Errorf("%s has a chain of %d certificates: at most %d certificates are allowed in a store", entry, chain, maxJKSEntries)
		}
		for j := range chain {
			if err := w.certificate(version, fmt.Sprintf("%s certificate %d", entry, j)); err != nil {
				return 0, err
			}
		}
		return certs + uint64(chain), nil
	case 2: // trusted certificate entry
		if err := w.certificate(version, entry+" certificate"); err != nil {
			return 0, err
		}
		certs++
		if certs > maxJKSEntries {
			return 0, fmt.Errorf("more than %d certificates", maxJKSEntries)
		}
		return certs, nil
	default:
		return 0, fmt.Errorf("%s has tag %d: only 1 (private key) and 2 (trusted certificate) exist", entry, tag)
	}
}

// checkJKS walks the structure of a JKS store (as written by Java's JavaKeyStore) and
// refuses one whose magic, version, entry tags, counts or lengths do not fit in data, so
// that decoding it allocates no more than data's size.
func checkJKS(data []byte) error {
	w := &jksWalker{data: data}
	magic, err := w.uint32("magic")
	if err != nil {
		return err
	}
	if magic != 0xfeedfeed {
		return fmt.Errorf("magic %#x is not JKS's 0xfeedfeed", magic)
	}
	version, err := w.uint32("version")
	if err != nil {
		return err
	}
	if version != 1 && version != 2 {
		return fmt.Errorf("version %d: only 1 and 2 exist", version)
	}
	count, err := w.uint32("entry count")
	if err != nil {
		return err
	}
	if count > maxJKSEntries {
		return fmt.Errorf("%d entries: at most %d are allowed", count, maxJKSEntries)
	}
	certs := uint64(0)
	for i := range count {
		if certs, err = w.entry(fmt.Sprintf("entry %d", i), version, certs); err != nil {
			return err
		}
	}
	if w.remaining() < jksDigestLen {
		return errors.New("truncated: the integrity digest is missing")
	}
	return nil
}
