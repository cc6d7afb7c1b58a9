#!/bin/sh
# make-certs.sh: certificates for a tls+tcp cluster (docs/security.md).
#
#   scripts/make-certs.sh [--expired] [--ca-name NAME] DIR HOST...
#
# In DIR (created, mode 0700): a cluster CA (ca.crt, ca.key; made once and
# reused by later runs, so hosts can be added), for each HOST a
# certificate and key in one PEM file HOST.pem (subjectAltName DNS:HOST,
# extended key usages serverAuth and clientAuth: a daemon uses it to listen
# and to dial other tasks), and client.pem for tfctl and remote sessions
# (CN tf-client, clientAuth). Keys are EC P-256, unencrypted, mode 0600.
# HOST must be a DNS name (mbedTLS 2.28, NNG's TLS engine, does not match
# IP addresses in certificates). Certificates are valid for 825 days, the
# CA for 10 years.
#
#   --expired      the HOST certificates are issued already expired (valid
#                  2020-01-01 to 2021-01-01; for tests), named HOST.pem;
#                  no client.pem.
#   --ca-name NAME the CA's common name (default tf-cluster-ca).
#
# Needs openssl (Debian's openssl 3.0).
set -eu

expired=0
ca_name=tf-cluster-ca
while [ $# -gt 0 ]; do
  case "$1" in
    --expired) expired=1; shift ;;
    --ca-name) [ $# -ge 2 ] || { echo "make-certs.sh: --ca-name needs a name" >&2; exit 2; }
               ca_name=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "make-certs.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: make-certs.sh [--expired] [--ca-name NAME] DIR HOST..." >&2
  exit 2
fi
dir=$1
shift
for h in "$@"; do
  case "$h" in
    *[!A-Za-z0-9.-]*|"")
      echo "make-certs.sh: '$h' is not a DNS name (letters, digits, '.' and '-')" >&2
      exit 2 ;;
  esac
  if printf '%s' "$h" | grep -Eq '^[0-9.]+$'; then
    echo "make-certs.sh: '$h' is an IP address: tls+tcp peers need DNS names" \
         "(mbedTLS 2.28 does not match IP addresses in certificates)" >&2
    exit 2
  fi
done
command -v openssl >/dev/null || { echo "make-certs.sh: openssl not found" >&2; exit 1; }

umask 077
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
if [ ! -f "$dir/ca.crt" ] || [ ! -f "$dir/ca.key" ]; then
  # shellcheck disable=SC2086
  openssl req -x509 $ec -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 3650 \
    -subj "/CN=$ca_name" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>"$tmp/log" ||
    { cat "$tmp/log" >&2; exit 1; }
fi

# leaf NAME CN SAN EKU: NAME.pem signed by the CA.
leaf() {
  name=$1 cn=$2 san=$3 eku=$4
  {
    [ -n "$san" ] && echo "subjectAltName=$san"
    echo "extendedKeyUsage=$eku"
    echo "keyUsage=critical,digitalSignature"
    echo "basicConstraints=critical,CA:FALSE"
  } >"$tmp/$name.ext"
  # shellcheck disable=SC2086
  openssl req $ec -keyout "$tmp/$name.key" -out "$tmp/$name.csr" -subj "/CN=$cn" \
    2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  if [ "$expired" = 1 ]; then
    # openssl x509 -days cannot start in the past: openssl ca can.
    mkdir -p "$tmp/db"
    : >"$tmp/db/index.txt"
    cat >"$tmp/ca.cnf" <<EOF
[ca]
default_ca = c
[c]
database = $tmp/db/index.txt
new_certs_dir = $tmp/db
serial = $tmp/db/serial
default_md = sha256
policy = p
unique_subject = no
copy_extensions = none
[p]
commonName = supplied
EOF
    openssl rand -hex 8 >"$tmp/db/serial"
    openssl ca -batch -config "$tmp/ca.cnf" -cert "$dir/ca.crt" -keyfile "$dir/ca.key" \
      -in "$tmp/$name.csr" -out "$tmp/$name.crt" -notext \
      -startdate 20200101000000Z -enddate 20210101000000Z \
      -extfile "$tmp/$name.ext" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  else
    openssl x509 -req -in "$tmp/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
      -set_serial "0x$(openssl rand -hex 8)" -out "$tmp/$name.crt" -days 825 \
      -extfile "$tmp/$name.ext" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  fi
  cat "$tmp/$name.crt" "$tmp/$name.key" >"$tmp/$name.pem"
  chmod 600 "$tmp/$name.pem"
  mv "$tmp/$name.pem" "$dir/$name.pem"
}

for h in "$@"; do
  leaf "$h" "$h" "DNS:$h" "serverAuth,clientAuth"
done
if [ "$expired" = 0 ]; then
  leaf client tf-client "" "clientAuth"
fi
chmod 644 "$dir/ca.crt"
echo "make-certs.sh: CA $dir/ca.crt; $(printf '%s.pem ' "$@")$([ "$expired" = 0 ] && echo client.pem) in $dir"
