set terminal svg size 900,480 dynamic font 'sans,12'
set key outside right top
set grid
set logscale x 2
set xrange [0.8:20]
set xtics (1,2,4,8,16)
set xlabel 'pgbench clients (2-core machine)'
set output 'contention-ratio.svg'
set ylabel 'TPS / plain TPS, same round (median)'
set yrange [0:1.4]
set arrow from 1,0.85 to 16,0.85 nohead dashtype 2
set label 'dashed: the target, 0.85 (8 clients, one resource / table scope)' at 1.1,0.1
plot 'contention.dat' using 1:7 with linespoints title 'row', 'contention.dat' using 1:11 with linespoints title 'resource1', 'contention.dat' using 1:15 with linespoints title 'spread', 'contention.dat' using 1:19 with linespoints title 'table', 'contention.dat' using 1:23 with linespoints title 'fupdate', 'contention.dat' using 1:27 with linespoints title 'transparent / txplain'
