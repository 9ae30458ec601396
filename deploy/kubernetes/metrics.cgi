#!/bin/sh
# GET /cgi-bin/metrics: tcpbufd's counters in Prometheus' text format.
if body=$(/usr/bin/tcpbufctl metrics 2>&1); then
	printf 'Content-Type: text/plain; version=0.0.4\r\n\r\n%s\n' "$body"
else
	printf 'Status: 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\n%s\n' "$body"
fi
