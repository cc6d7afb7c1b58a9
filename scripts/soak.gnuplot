# soak.gnuplot: the soak's RSS samples (make soak) as a PNG.
# Variables: csv (input, from bench_dist --soak), out (the PNG).
set terminal pngcairo size 900,420 font ",10"
set output out
set datafile separator ","
set key top left
set xlabel "steps (10,000 null, then 1,000 dense 100 MB)"
set ylabel "RSS (MiB)"
set grid
set arrow from 10000, graph 0 to 10000, graph 1 nohead dt 2
plot csv using 1:($3/1024) skip 1 with lines lw 2 title "tfmaster", \
     csv using 1:($4/1024) skip 1 with lines lw 2 title "tfworker (ps)", \
     csv using 1:($5/1024) skip 1 with lines lw 2 title "tfworker (worker)"
