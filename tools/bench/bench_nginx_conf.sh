# shellcheck shell=bash
# Sourced by the nginx benchmarks. bench_nginx_conf FILE DIR PORT ROOT MAIN
# HTTP SERVER: writes FILE, an nginx.conf serving the files of ROOT on
# 127.0.0.1:PORT without an access log, its pid and error log in DIR; MAIN,
# HTTP and SERVER go into the main, http and server blocks.
bench_nginx_conf() {
	cat >"$1" <<CONF
$5
pid $2/nginx.pid;
error_log $2/logs/error.log warn;
http {
    access_log off;
    $6
    server {
        listen 127.0.0.1:$3;
        root $4;
        $7
    }
}
CONF
}
