#!/usr/bin/python3
"""An independent verifier of wit's ranged data tree (docs/proofs.md), in
Python with hashlib only: it shares no code with wit. It recomputes every
root of tests/vectors/ranged_blake2b.json from the leaves and checks every
proof there, and recomputes every commitment of data_proofs_blake2b.json from
its records and checks every proof document there. A case passes when this
verifier's ok / not ok is the vector's ("ok" / "valid" against any error).

Usage: check_ranged.py RANGED.json DATA.json   (exit 0 all agree, 1 not)
"""
import hashlib
import json
import sys

PERSONAL = b"wit/rangenode/v1"


def H(data, person=b""):
    return hashlib.blake2b(data, digest_size=32, person=person).digest()


def leaf_hash(data):
    return H(b"\x00" + data)


def ranged_node(left, right, left_last, right_first):
    # 128 bytes, one BLAKE2b block, personalised: the node's domain tag.
    return H(left + right + left_last + right_first, PERSONAL)


def rfc_node(left, right):
    return H(b"\x01" + left + right)


EMPTY = H(b"")


def split(n):
    k = 1
    while 2 * k < n:
        k *= 2
    return k


def root(leaves, ranged=True):
    """The tree straight from its definition: RFC 6962's shape, leaves not
    hashed again, a ranged node binding the leaves on both sides of its split."""
    if not leaves:
        return EMPTY
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    l, r = root(leaves[:k], ranged), root(leaves[k:], ranged)
    return ranged_node(l, r, leaves[k - 1], leaves[k]) if ranged else rfc_node(l, r)


def siblings(index, size):
    """(begin, end) of each sibling on the path of `index`, bottom-up."""
    out = []
    b, e = 0, size
    while e - b > 1:
        k = split(e - b)
        if index < b + k:
            out.append((b + k, e))
            e = b + k
        else:
            out.append((b, b + k))
            b = b + k
    return out[::-1]


def verify_inclusion(index, size, leaf, path, ranges, want_root, ranged=True):
    """Computes the root and range from the proof, then compares."""
    if index >= size:
        return False
    sib = siblings(index, size)
    if len(path) != len(sib):
        return False
    if ranged and len(ranges) != len(path):
        return False
    if not ranged and ranges:
        return False
    h, first, last = leaf, leaf, leaf
    for (b, e), s, rg in zip(sib, path, ranges if ranged else [None] * len(path)):
        right = b > index
        if not ranged:
            h = rfc_node(h, s) if right else rfc_node(s, h)
            continue
        sf, sl = rg
        if e - b == 1:
            if not (sf == s and sl == s):
                return False
        elif not sf < sl:
            return False
        if right:
            if not last < sf:
                return False
            h = ranged_node(h, s, last, sf)
            last = sl
        else:
            if not sl < first:
                return False
            h = ranged_node(s, h, sl, first)
            first = sf
    return h == want_root


def verify_exclusion(value, size, left, right, want_root, ranged=True):
    """left / right: None or (index, leaf, path, ranges)."""
    if size == 0:
        return left is None and right is None and want_root == EMPTY
    if left is None and right is None:
        return False
    if left is not None and right is None and left[0] != size - 1:
        return False
    if left is None and right is not None and right[0] != 0:
        return False
    if left is not None and right is not None and right[0] != left[0] + 1:
        return False
    if left is not None and not left[1] < value:
        return False
    if right is not None and not value < right[1]:
        return False
    for br in (left, right):
        if br is not None and not verify_inclusion(br[0], size, br[1], br[2], br[3], want_root, ranged):
            return False
    return True


def hx(s):
    b = bytes.fromhex(s)
    if len(b) != 32:
        raise ValueError("not a 32-byte hash")
    return b


def rng(rs):
    out = []
    for r in rs:
        if not isinstance(r, list) or len(r) != 2:
            raise ValueError("not a range")
        out.append((hx(r[0]), hx(r[1])))
    return out


def vector_tree(n):
    return sorted(leaf_hash(b"leaf-%d" % i) for i in range(n))


def check_ranged(doc):
    bad = 0
    for c in doc["cases"]:
        t = c["type"]
        n = c["size"]
        tree = [hx(x) for x in c["leaves"]] if "leaves" in c else vector_tree(n)
        if t == "root":
            ok = root(tree) == hx(c["root"])
            want = True
        elif t == "inclusion":
            ok = verify_inclusion(c["index"], c["proof_size"], hx(c["leaf"]), [hx(x) for x in c["path"]],
                                  rng(c["ranges"]), hx(c["root"]))
            want = c["expected"] == "ok"
        elif t == "exclusion":
            def br(j):
                return None if j is None else (j["index"], hx(j["leaf"]), [hx(x) for x in j["path"]], rng(j["ranges"]))
            ok = verify_exclusion(hx(c["value"]), c["proof_size"], br(c["left"]), br(c["right"]), hx(c["root"]))
            want = c["expected"] == "ok"
        else:
            raise SystemExit("unknown case type " + t)
        # A proof the vector calls valid must be of the tree it names.
        if want and t != "root" and root(tree) != hx(c["root"]):
            ok = False
        if ok != want:
            bad += 1
            print("DISAGREE (ranged):", c["description"], "- vector says", c.get("expected", "ok"), "- python says",
                  "ok" if ok else "not ok")
    return bad, len(doc["cases"])


def verify_document(d, commit, version):
    """ok / not ok of a wit.proof document against a commitment (n, root)."""
    try:
        if d.get("format") != "wit.proof" or d.get("version") not in (2, 3):
            return False
        if d.get("version") != version:
            return False
        ref = d["commitment"]
        if set(ref) != {"n", "root"} or ref["n"] != commit["n"] or hx(ref["root"]) != hx(commit["root"]):
            return False
        ranged = version == 3
        known = {"format", "version", "type", "hash", "commitment", "leaf", "size", "record"}
        if d["type"] == "inclusion":
            known |= {"index", "path", "ranges"}
        elif d["type"] == "exclusion":
            known |= {"left", "right"}
        if set(d) - known:
            return False
        if d["size"] != commit["n"]:
            return False
        leaf = hx(d["leaf"])
        if "record" in d and leaf_hash(d["record"].encode("utf-8")) != leaf:
            return False
        root_ = hx(commit["root"])
        if d["type"] == "inclusion":
            return verify_inclusion(d["index"], d["size"], leaf, [hx(x) for x in d["path"]],
                                    rng(d.get("ranges", [])), root_, ranged)
        if d["type"] == "exclusion":
            def br(j):
                if j is None:
                    return None
                if set(j) - {"index", "leaf", "path", "ranges"}:
                    raise ValueError("unknown field")
                return (j["index"], hx(j["leaf"]), [hx(x) for x in j["path"]], rng(j.get("ranges", [])))
            return verify_exclusion(leaf, d["size"], br(d["left"]), br(d["right"]), root_, ranged)
        return False
    except (KeyError, ValueError, TypeError, AttributeError):
        return False


def check_data(doc):
    bad = 0
    commits = []
    for s in doc["sets"]:
        c = s["commitment"]
        version = c["version"]
        distinct = sorted({leaf_hash(r.encode("utf-8")) for r in s["records"]})
        tree = [hx(x) for x in s["tree_leaves"]]
        if s.get("unsorted"):
            # The trainer's own tree: the same leaves, not in order.
            if sorted(tree) != distinct:
                bad += 1
                print("DISAGREE (data): an unsorted set's tree is not its records' leaves")
        elif tree != distinct:
            bad += 1
            print("DISAGREE (data): a set's tree is not its sorted distinct record leaves")
        if root(tree, version == 3) != hx(c["root"]) or c["n"] != len(tree) or c["records"] != len(s["records"]):
            bad += 1
            print("DISAGREE (data): a set's commitment is not its records'", c)
        commits.append((c, version))
    for case in doc["cases"]:
        c, version = commits[case["set"]]
        ok = verify_document(case["document"], c, version)
        want = case["expected"] == "valid"
        if ok != want:
            bad += 1
            print("DISAGREE (data):", case["description"], "- vector says", case["expected"], "- python says",
                  "valid" if ok else "not valid")
    return bad, len(doc["cases"])


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        b1, n1 = check_ranged(json.load(f))
    with open(sys.argv[2]) as f:
        b2, n2 = check_data(json.load(f))
    print("ranged tree vectors: %d cases, %d disagree; proof documents: %d cases, %d disagree" % (n1, b1, n2, b2))
    return 1 if b1 or b2 else 0


if __name__ == "__main__":
    sys.exit(main())
