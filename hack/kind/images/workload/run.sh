# The workload's entrypoint, run by busybox sh as PID 1. PID 1 gets no
# default action for SIGTERM, so a plain `httpd -f` would ignore it and
# every pod deletion would wait out the whole grace period (30s by
# default), which would make each rollout step 30s long. The shell traps
# TERM and exits at once; httpd runs in the background meanwhile.
trap 'exit 0' TERM INT
/bin/busybox httpd -f -p 8080 -h /www &
# wait returns when a trapped signal arrives.
wait $!
