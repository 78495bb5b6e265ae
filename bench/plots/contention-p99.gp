set terminal svg size 900,480 dynamic font 'sans,12'
set key outside right top
set grid
set logscale x 2
set xrange [0.8:20]
set xtics (1,2,4,8,16)
set xlabel 'pgbench clients (2-core machine)'
set output 'contention-p99.svg'
set ylabel 'P99 latency, ms (median of rounds)'
set yrange [0:*]
plot 'contention.dat' using 1:5 with linespoints title 'plain', 'contention.dat' using 1:9 with linespoints title 'row', 'contention.dat' using 1:13 with linespoints title 'resource1', 'contention.dat' using 1:17 with linespoints title 'spread', 'contention.dat' using 1:21 with linespoints title 'table', 'contention.dat' using 1:25 with linespoints title 'fupdate', 'contention.dat' using 1:29 with linespoints title 'transparent', 'contention.dat' using 1:33 with linespoints title 'txplain'
