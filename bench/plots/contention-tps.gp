set terminal svg size 900,480 dynamic font 'sans,12'
set key outside right top
set grid
set logscale x 2
set xrange [0.8:20]
set xtics (1,2,4,8,16)
set xlabel 'pgbench clients (2-core machine)'
set output 'contention-tps.svg'
set ylabel 'TPS (median of rounds)'
set yrange [0:*]
plot 'contention.dat' using 1:2 with linespoints title 'plain', 'contention.dat' using 1:6 with linespoints title 'row', 'contention.dat' using 1:10 with linespoints title 'resource1', 'contention.dat' using 1:14 with linespoints title 'spread', 'contention.dat' using 1:18 with linespoints title 'table', 'contention.dat' using 1:22 with linespoints title 'fupdate', 'contention.dat' using 1:26 with linespoints title 'transparent', 'contention.dat' using 1:30 with linespoints title 'txplain'
